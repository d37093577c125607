"""A fixture copy of the parts of OmniGAIA's released agent loop that issue 43's side-by-side
test runs (tests/bench/test_omnigaia_release_side_by_side.py).

Source: https://github.com/RUC-NLPIR/OmniGAIA at commit af5f797f9388f0eba02a55399e7636e34b5f3c56
  - src/run_base_agent.py: SYSTEM_PROMPT, FORCED_FINAL_ANSWER_PROMPT, AgentTools (web_search,
    page_browser, code_executor), OPENAI_TOOLS_SCHEMA, QwenBaseAgent (all methods but the
    active-perception ones, which the base agent does not call)
  - src/tools/web_tools.py: get_openai_function_web_search, get_openai_function_page_browser
  - src/tools/code_executor.py: get_openai_function_code_executor
Copied verbatim. Changed, each marked "# fixture:": the imports of the release's own modules
(config_loader, tools.*), whose network tools are replaced by the stubs below; OmniInfoManager
(the data-folder look-up) is not built; the active-perception methods are left out.

The release's licence:

MIT License

Copyright (c) 2026 Xiaoxi Li

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

# ruff: noqa
# fmt: off
# mypy: ignore-errors

import os
import json
import asyncio
import logging
import base64
import mimetypes
import re
import time
from typing import List, Dict, Any, Optional, Union, Tuple

try:
    from openai import AsyncOpenAI
except ImportError:
    AsyncOpenAI = None

logger = logging.getLogger("BaseAgent")

# fixture: the network tools of src/tools/*.py are stubs; a test sets what they return.
STUB_RESULTS: Dict[str, Any] = {"web_search": [], "page_browser": {}, "code_executor": {}}


async def web_search(query: str, top_k: int = 10) -> List[Dict[str, Any]]:  # fixture: stub
    return STUB_RESULTS["web_search"]


async def page_browser(urls: List[str]) -> Dict[str, str]:  # fixture: stub
    return STUB_RESULTS["page_browser"]


async def code_executor(code: str) -> Dict[str, Any]:  # fixture: stub
    return STUB_RESULTS["code_executor"]


# --- src/tools/web_tools.py ---
def get_openai_function_web_search() -> dict:
    """Return the OpenAI tool/function definition for web_search."""
    return {
        "type": "function",
        "function": {
            "name": "web_search",
            "description": (
                "Perform a Google web search and return the top search results (title, URL, snippet, date). "
                "This tool does NOT fetch the full webpage content. "
                "Use this to find relevant URLs and summaries. "
                "If you need detailed content, use the page_browser tool with the URLs found here. "
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": (
                            "The search query string. Be specific and use keywords that are likely to return relevant results. "
                            "Example: 'Nobel Prize Physics 2023 winner' or 'population of Tokyo 2024'"
                        )
                    }
                },
                "required": ["query"]
            }
        }
    }

def get_openai_function_page_browser() -> dict:
    """Return the OpenAI tool/function definition for page_browser."""
    return {
        "type": "function",
        "function": {
            "name": "page_browser",
            "description": (
                "Fetch and extract the full text content from one or more webpages given their URLs. "
                "Use this when you have specific URLs (e.g., from search results) and need to read their detailed content. "
                "Returns a mapping from each URL to its extracted text content."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "urls": {
                        "type": "array",
                        "items": {"type": "string", "format": "uri"},
                        "description": (
                            "A list of webpage URLs to fetch content from. "
                            "Example: ['https://en.wikipedia.org/wiki/Tokyo', 'https://example.com/article']"
                        ),
                        "minItems": 1,
                        "maxItems": 10
                    }
                },
                "required": ["urls"]
            }
        }
    }

# --- src/tools/code_executor.py ---
def get_openai_function_code_executor() -> dict:
    """Return the OpenAI tool/function definition for code_executor."""
    description = (
        "Execute Python code in a secure sandbox environment. Use this tool for:\n"
        "1. Complex mathematical computations (algebra, calculus, statistics, etc.)\n"
        "2. Data processing and analysis\n"
        "Available modules: numpy, pandas, sympy, math, json, csv, datetime, random, collections, itertools, requests\n"
        "Use print() to output results."
    )
    return {
        "type": "function",
        "function": {
            "name": "code_executor",
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "Python code to execute."
                    }
                },
                "required": ["code"]
            }
        }
    }

# --- src/run_base_agent.py ---
SYSTEM_PROMPT = (
    "You are an omni-modal general AI assistant. Please answer the question "
    "provided to you based on the input image, audio, or video content.\n\n"
    "You should think step by step to answer the question. You may use "
    "available tools to assist with your analysis if needed.\n\n"
    "Please provide your final answer using this format: "
    "<answer>YOUR_ANSWER</answer>."
)

FORCED_FINAL_ANSWER_PROMPT = (
    "You have reached the maximum tool-use turns. Stop calling tools and provide your final answer now. "
    "Return only one final answer in the format <answer>YOUR_ANSWER</answer>."
)


class AgentTools:
    """
    Wrapper for tool implementations.
    """
    @staticmethod
    async def web_search(query: str) -> Dict[str, Any]:
        logger.info(f"[Tool Call] web_search: {query}")
        return await web_search(query)

    @staticmethod
    async def page_browser(urls: Union[str, List[str]]) -> Dict[str, Any]:
        logger.info(f"[Tool Call] page_browser: {urls}")
        # page_browser in web_tools expects a list of urls
        if isinstance(urls, str):
            urls = [urls]
        return await page_browser(urls)

    @staticmethod
    async def code_executor(code: str) -> Dict[str, Any]:
        logger.info(f"[Tool Call] code_executor: \n{code}")
        return await code_executor(code)


OPENAI_TOOLS_SCHEMA = [
    get_openai_function_web_search(),
    get_openai_function_page_browser(),
    get_openai_function_code_executor()
]


class QwenBaseAgent:
    def __init__(
        self,
        api_key: str,
        model: str,
        api_base_url: str,
        enable_active_perception: bool = False,
        request_timeout: int = 600,
        forced_final_timeout: int = 300,
        ffmpeg_timeout: int = 180,
        max_action_limit: int = 50,
    ):
        self.api_key = api_key
        self.model = model
        self.api_base_url = api_base_url
        self.enable_active_perception = enable_active_perception
        self.request_timeout = request_timeout
        self.forced_final_timeout = forced_final_timeout
        self.ffmpeg_timeout = ffmpeg_timeout
        self.max_action_limit = max(1, int(max_action_limit))
        if AsyncOpenAI is None:
            raise ImportError("openai package is required for QwenBaseAgent")
        self.client = AsyncOpenAI(api_key=api_key, base_url=api_base_url)
        self.tools = AgentTools()
        self.info_manager = None  # fixture: OmniInfoManager (data-folder look-up) is not built

    def _is_url(self, s: str) -> bool:
        return isinstance(s, str) and (s.startswith("http://") or s.startswith("https://") or s.startswith("data:"))

    def _to_data_url(self, path: str, default_mime: str) -> str:
        mime, _ = mimetypes.guess_type(path)
        mime = mime or default_mime
        try:
            with open(path, "rb") as f:
                b64 = base64.b64encode(f.read()).decode("utf-8")
            return f"data:{mime};base64,{b64}"
        except Exception as e:
            logger.error(f"Failed to convert {path} to data URL: {e}")
            raise

    def _build_part(self, kind: str, source: str) -> Optional[Dict[str, Any]]:
        default_mimes = {
            "image": "image/jpeg",
            "audio": "audio/wav",
            "video": "video/mp4",
        }
        if self._is_url(source):
            url = source
        else:
            if not os.path.exists(source):
                logger.warning(f"{kind} file not found: {source}")
                return None
            url = self._to_data_url(source, default_mimes[kind])

        return {
            "type": f"{kind}_url",
            f"{kind}_url": {"url": url},
        }

    def _build_tools_prompt(self, tools_schema: Optional[List[Dict[str, Any]]] = None) -> str:
        """Build Hermes-style tools prompt for manual tool calling."""
        tools_json = []
        active_schema = tools_schema if tools_schema is not None else OPENAI_TOOLS_SCHEMA
        for tool in active_schema:
            func = tool["function"]
            tools_json.append(json.dumps(func, ensure_ascii=False))

        tools_str = "\n".join(tools_json)

        return f"""# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tools_str}
</tools>

For each function call, return a JSON object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": "<function-name>", "arguments": <args-json-object>}}
</tool_call>"""

    def _parse_tool_calls(self, content: str) -> List[Dict[str, Any]]:
        """Parse <tool_call> tags from model output."""
        tool_calls = []
        pattern = r"<tool_call>\s*(\{.*?\})\s*</tool_call>"
        matches = re.findall(pattern, content or "", re.DOTALL)

        for i, match in enumerate(matches):
            try:
                tool_call_data = json.loads(match)
                tool_calls.append(
                    {
                        "id": f"call_{i}_{int(time.time()*1000)}",
                        "name": tool_call_data.get("name"),
                        "arguments": tool_call_data.get("arguments", {}),
                    }
                )
            except json.JSONDecodeError as e:
                logger.warning(f"Failed to parse tool call JSON: {match}, error: {e}")
                continue

        return tool_calls

    def _normalize_media_id(self, media_id: Any) -> str:
        if media_id is None:
            return ""
        mid = str(media_id).strip()
        if mid.startswith("<") and mid.endswith(">") and len(mid) > 2:
            mid = mid[1:-1].strip()
        return mid

    def _parse_time_value(self, value: Any) -> Optional[float]:
        if value is None:
            return None
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            v = value.strip()
            if not v or v.lower() in {"none", "null"}:
                return None
            if v.endswith("s"):
                v = v[:-1].strip()
            try:
                return float(v)
            except ValueError:
                return None
        return None

    def _register_media_id(self, media_id: str, path: str, mapping: Dict[str, str]) -> None:
        if not media_id:
            return
        if media_id not in mapping:
            mapping[media_id] = path
        if media_id.startswith(("image_", "audio_", "video_")):
            stripped = media_id.split("_", 1)[1]
            if stripped and stripped not in mapping:
                mapping[stripped] = path

    def _build_media_id_map(self, media_items: List[Union[str, Dict[str, Any]]]) -> Dict[str, str]:
        mapping: Dict[str, str] = {}
        for item in media_items:
            if isinstance(item, dict):
                path = item.get("path")
            else:
                path = item
            if not path or self._is_url(path) or not os.path.exists(path):
                continue
            base = os.path.splitext(os.path.basename(path))[0]
            self._register_media_id(base, path, mapping)
            if isinstance(item, dict):
                kind = item.get("type")
                if kind:
                    self._register_media_id(f"{kind}_{base}", path, mapping)
        return mapping

    def _resolve_media_path(self, media_id: str, media_id_to_path: Dict[str, str]) -> Optional[str]:
        normalized = self._normalize_media_id(media_id)
        if not normalized:
            return None
        mapped_path = media_id_to_path.get(normalized)
        if mapped_path and os.path.exists(mapped_path):
            return mapped_path
        return self.info_manager.get_file_path(normalized)

    def _detect_media_types(self, media_items: List[Union[str, Dict[str, Any]]]) -> Dict[str, bool]:
        flags = {"image": False, "audio": False, "video": False}
        for item in media_items:
            if isinstance(item, dict):
                path = item.get("path")
                kind = item.get("type", "")
            else:
                path = item
                kind = ""
            if not path or self._is_url(path):
                continue
            if not kind:
                if path.endswith((".mp4", ".mkv", ".avi", ".webm")):
                    kind = "video"
                elif path.endswith((".wav", ".mp3", ".flac", ".m4a")):
                    kind = "audio"
                else:
                    kind = "image"
            if kind in flags:
                flags[kind] = True
        return flags

    # fixture: the active-perception methods (_build_active_perception_tools_schema to
    # _handle_active_perception_tool) are left out: the base agent does not call them.

    async def run(
        self,
        question: str,
        media_items: List[Union[str, Dict[str, str]]] = [],
        semaphore: Optional[asyncio.Semaphore] = None,
    ) -> Dict[str, Any]:
        content_parts = []
        media_id_to_path = self._build_media_id_map(media_items)

        for item in media_items:
            path = item
            kind = "image"

            if isinstance(item, dict):
                path = item.get("path")
                t = item.get("type", "image")
                if t == "video":
                    kind = "video"
                elif t == "audio":
                    kind = "audio"
                else:
                    kind = "image"
            else:
                if path.endswith((".mp4", ".mkv", ".avi", ".webm")):
                    kind = "video"
                elif path.endswith((".wav", ".mp3", ".flac", ".m4a")):
                    kind = "audio"

            if path:
                part = self._build_part(kind, path)
                if part:
                    content_parts.append(part)

        if question:
            content_parts.append({"type": "text", "text": question})

        tools_schema = OPENAI_TOOLS_SCHEMA
        system_prompt = SYSTEM_PROMPT
        if self.enable_active_perception:
            tools_schema = self._build_active_perception_tools_schema(media_items)
            system_prompt = f"{SYSTEM_PROMPT}\n\n{ACTIVE_PERCEPTION_PROMPT_NOTE}"

        system_content = system_prompt + "\n\n" + self._build_tools_prompt(tools_schema)
        messages = [
            {"role": "system", "content": [{"type": "text", "text": system_content}]},
            {"role": "user", "content": content_parts},
        ]

        max_turns = self.max_action_limit
        current_turn = 0
        all_tool_calls = []

        while current_turn < max_turns:
            current_turn += 1
            logger.info(f"Turn {current_turn}...")

            try:
                response = await self._run_with_tools(messages, semaphore, all_tool_calls, media_id_to_path)
                if response is not None:
                    response["messages"] = messages
                    return response
                continue
            except Exception as e:
                logger.error(f"Error in Qwen run loop: {e}")
                return {"output": f"Error: {str(e)}", "tool_calls": all_tool_calls, "messages": messages}

        return await self._force_final_answer(messages, all_tool_calls, semaphore=semaphore)

    async def _force_final_answer(
        self,
        messages: List[Dict[str, Any]],
        all_tool_calls: List[Dict[str, Any]],
        semaphore: Optional[asyncio.Semaphore] = None,
    ) -> Dict[str, Any]:
        """Force one final answer generation after max turns."""
        forced_user_msg = {"role": "user", "content": [{"type": "text", "text": FORCED_FINAL_ANSWER_PROMPT}]}
        forced_messages = messages + [forced_user_msg]

        async def _do_request():
            return await self.client.chat.completions.create(
                model=self.model,
                messages=forced_messages,
                max_tokens=4096,
                timeout=self.forced_final_timeout,
                temperature=0.2,
                top_p=0.9,
                extra_body={
                    "top_k": 20,
                    "repetition_penalty": 1.05,
                },
            )

        try:
            if semaphore:
                async with semaphore:
                    response = await _do_request()
            else:
                response = await _do_request()
            content = response.choices[0].message.content or "Max turns reached without final answer."
            messages.append(forced_user_msg)
            messages.append({"role": "assistant", "content": [{"type": "text", "text": content}]})
            return {"output": content, "tool_calls": all_tool_calls, "messages": messages}
        except Exception as e:
            logger.error(f"Forced final answer failed: {e}")
            return {"output": "Max turns reached without final answer.", "tool_calls": all_tool_calls, "messages": messages}

    async def _run_with_tools(
        self,
        messages: List[Dict[str, Any]],
        semaphore: Optional[asyncio.Semaphore],
        all_tool_calls: List[Dict[str, Any]],
        media_id_to_path: Dict[str, str],
    ) -> Optional[Dict[str, Any]]:
        """
        Run with manual Hermes-style tool calling (no tools parameter).
        Returns None to continue the loop, or a result dict to finish.
        """

        async def _do_request():
            return await self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                max_tokens=20480,
                timeout=self.request_timeout,
                temperature=0.6,
                top_p=0.95,
                extra_body={
                    "top_k": 20,
                    "repetition_penalty": 1.05,
                },
            )

        if semaphore:
            async with semaphore:
                response = await _do_request()
        else:
            response = await _do_request()

        usage_info = None
        if hasattr(response, "usage") and response.usage:
            usage_info = {
                "completion_tokens": response.usage.completion_tokens,
                "prompt_tokens": response.usage.prompt_tokens,
                "total_tokens": response.usage.total_tokens,
            }
            logger.info(f"Token Usage: {usage_info}")

        content = response.choices[0].message.content or ""
        reasoning_content = getattr(response.choices[0].message, "reasoning_content", None)
        if reasoning_content:
            content = f"<think>{reasoning_content}</think>\n" + content

        cleaned_content = content.strip()
        tool_calls = self._parse_tool_calls(content)

        if tool_calls:
            logger.info(f"Parsed {len(tool_calls)} tool calls from response")
            asst_msg = {"role": "assistant", "content": [{"type": "text", "text": content}]}
            if usage_info:
                asst_msg["usage"] = usage_info
            messages.append(asst_msg)

            async def execute_tool(tc: Dict[str, Any]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
                fn_name = tc.get("name")
                fn_args = tc.get("arguments", {})
                logger.info(f"Executing tool: {fn_name} with args: {fn_args}")

                args_to_pass = fn_args
                if isinstance(args_to_pass, str):
                    try:
                        args_to_pass = json.loads(args_to_pass)
                    except Exception:
                        args_to_pass = {}
                if not isinstance(args_to_pass, dict):
                    args_to_pass = {}

                if not fn_name:
                    return {"name": "unknown", "content": json.dumps({"error": "Missing tool name"}, ensure_ascii=False)}, []

                if self.enable_active_perception and fn_name in {"read_video", "read_audio", "read_image"}:
                    tool_result, media_parts = await self._handle_active_perception_tool(
                        fn_name, args_to_pass, media_id_to_path
                    )
                    return {"name": fn_name, "content": json.dumps(tool_result, ensure_ascii=False)}, media_parts

                tool_result = {}
                max_tool_retries = 3
                if hasattr(self.tools, fn_name):
                    tool_func = getattr(self.tools, fn_name)
                    for attempt in range(max_tool_retries):
                        try:
                            tool_result = await tool_func(**args_to_pass)
                            if not tool_result and attempt < max_tool_retries - 1:
                                logger.warning(
                                    f"Tool {fn_name} returned empty result (Attempt {attempt+1}). Retrying..."
                                )
                                await asyncio.sleep(1)
                                continue
                            break
                        except Exception as e:
                            if attempt < max_tool_retries - 1:
                                logger.warning(f"Tool {fn_name} failed (Attempt {attempt+1}): {e}. Retrying...")
                                await asyncio.sleep(1)
                            else:
                                tool_result = {"error": str(e)}
                else:
                    tool_result = {"error": f"Tool {fn_name} not found."}

                return {"name": fn_name, "content": json.dumps(tool_result, ensure_ascii=False)}, []

            tool_exec_results = await asyncio.gather(*[execute_tool(tc) for tc in tool_calls])

            for tc in tool_calls:
                all_tool_calls.append(
                    {
                        "id": tc["id"],
                        "function": {
                            "name": tc["name"],
                            "arguments": json.dumps(tc["arguments"]) if isinstance(tc["arguments"], dict) else tc["arguments"],
                        },
                    }
                )

            tool_content_parts: List[Dict[str, Any]] = []
            for tool_result, media_parts in tool_exec_results:
                tool_content_parts.append({"type": "text", "text": tool_result["content"]})
                if media_parts:
                    tool_content_parts.extend(media_parts)
            if not tool_content_parts:
                tool_content_parts = [{"type": "text", "text": "{}"}]

            messages.append({"role": "tool", "content": tool_content_parts})
            return None

        if content:
            log_content = re.sub(r"<think>.*?</think>", "", cleaned_content, flags=re.DOTALL).strip()
            logger.info(f"Final Answer: {log_content}")
            asst_msg = {"role": "assistant", "content": [{"type": "text", "text": content}]}
            if usage_info:
                asst_msg["usage"] = usage_info
            messages.append(asst_msg)
            return {"output": content, "tool_calls": all_tool_calls}
        return {"output": "Error: Empty response from model.", "tool_calls": all_tool_calls}

    async def close(self):
        await self.client.close()
