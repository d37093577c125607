"""``openai`` and its aliases: any OpenAI-compatible chat-completions endpoint, via the SDK.

Serves OpenAI, vLLM, SGLang, Ollama, llama.cpp servers, OpenRouter, DeepSeek and Gemini's
compatible endpoint by base URL and key. The SDK's own retries are off: the Model wrapper retries.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections.abc import Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import openai
from openai import AsyncOpenAI

from omnilab.content import Text
from omnilab.models.adapter import AdapterSpec
from omnilab.models.errors import ErrorKind, ModelConfigError, ProviderError, kind_for_status
from omnilab.models.parsing import parse_arguments
from omnilab.models.providers.openai_wire import (
    has_media,
    response_format_prompt,
    tool_prompt,
    wire_logprobs,
    wire_messages,
    wire_response_format,
    wire_tool_choice,
    wire_tools,
)
from omnilab.models.types import (
    GenerateConfig,
    Message,
    ModelOutput,
    ToolCall,
    ToolSpec,
    Usage,
    new_call_id,
)

__all__ = ["OpenAIAdapter", "create"]

# Servers without authentication (vLLM, Ollama, ...) accept any key, but the SDK wants one.
_NO_KEY = "EMPTY"

# How servers word a prompt that does not fit (OpenAI, vLLM, SGLang, llama.cpp server, Ollama).
_CONTEXT_PHRASES = (
    "maximum context length",
    "context length",
    "context window",
    "exceeds the available context",
    "too many tokens",
    "prompt is too long",
)


def _retry_after(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            pass
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, when.timestamp() - time.time())
    return None


def _error_detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    text = error.response.text if error.response is not None else ""
    return text.strip()[:300] or error.message


class OpenAIAdapter:
    """One model on one OpenAI-compatible endpoint."""

    def __init__(self, spec: AdapterSpec) -> None:
        if spec.base_url is None:
            raise ModelConfigError(
                spec.name, "no base URL", advice="add @http://host:port/v1 to the model name"
            )
        self.name = spec.name
        self.model_id = spec.model
        self.base_url = spec.base_url
        self.endpoint = spec.base_url
        self.capabilities = spec.capabilities
        self._api_key = spec.api_key or _NO_KEY
        self._key_hint = spec.key_hint
        self.secrets: tuple[str, ...] = (spec.api_key,) if spec.api_key else ()
        self._timeout_s = spec.settings.timeout_s
        # The SDK's HTTP pool belongs to the event loop it was first used on, so each loop
        # (each asyncio.run of the sync API) gets its own client.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self._timeout_s,
            )
            self._clients[loop] = client
        return client

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> dict[str, Any]:
        """The JSON body of one ``/chat/completions`` request."""
        wire = wire_messages(messages, self.capabilities, self.name)
        body: dict[str, Any] = {"model": self.model_id, "messages": wire}
        if tools and self.capabilities.tool_calls:
            body["tools"] = wire_tools(tools)
            choice = wire_tool_choice(config.tool_choice)
            if choice is not None:
                body["tool_choice"] = choice
        elif tools and config.tool_choice != "none":
            body["messages"] = [{"role": "system", "content": tool_prompt(tools)}, *wire]
        fmt = config.response_format
        if fmt is not None and self.capabilities.json_schema:
            body["response_format"] = wire_response_format(fmt)
        elif fmt is not None:
            prompt = {"role": "system", "content": response_format_prompt(fmt)}
            body["messages"] = [prompt, *body["messages"]]
        for field in ("temperature", "top_p", "max_tokens", "stop", "seed"):
            value = getattr(config, field)
            if value is not None:
                body[field] = value
        if config.logprobs:
            body["logprobs"] = True
            if config.top_logprobs is not None:
                body["top_logprobs"] = config.top_logprobs
        # Passed through as the user wrote it (chat_template_kwargs, top_k, ...), winning on clashes.
        body.update(config.extra_body)
        return body

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """One request to ``/chat/completions``."""
        if has_media(messages):
            # Reading, cutting and encoding media blocks; keep the event loop free meanwhile.
            body = await asyncio.to_thread(self.request_body, messages, tools, config)
        else:
            body = self.request_body(messages, tools, config)
        timeout = config.timeout_s or self._timeout_s
        try:
            # client.post (the SDK's documented raw-request route) sends the body as built and
            # hands back the decoded JSON: the typed create() re-walks every message against its
            # TypedDicts and builds response models, about half the client's CPU per call in
            # bench/models.py. Servers' extra fields (reasoning_content) stay plain dict keys.
            response: object = await self._client().post(
                "/chat/completions", cast_to=object, body=body, options={"timeout": timeout}
            )
        except openai.APIStatusError as e:
            raise self._status_error(e, messages) from None
        except openai.APITimeoutError:
            raise ProviderError(ErrorKind.TIMEOUT, f"no answer within {timeout:g} s") from None
        except openai.APIConnectionError as e:
            cause = e.__cause__ or e
            raise ProviderError(
                ErrorKind.CONNECTION, f"cannot connect to {self.base_url} ({type(cause).__name__})"
            ) from None
        except openai.APIResponseValidationError as e:
            raise ProviderError(
                ErrorKind.BAD_RESPONSE, f"unexpected response ({e.message})"
            ) from None
        return self._parse(response)

    def _status_error(
        self, error: openai.APIStatusError, messages: Sequence[Message]
    ) -> ProviderError:
        kind = kind_for_status(error.status_code)
        detail = _error_detail(error)
        advice = None
        if kind is ErrorKind.AUTH and self._api_key == _NO_KEY:
            detail = f"{self.base_url} needs an API key ({detail})"
            advice = f"set {self._key_hint}" if self._key_hint else None
        elif kind is ErrorKind.BAD_REQUEST and any(p in detail.lower() for p in _CONTEXT_PHRASES):
            kind = ErrorKind.CONTEXT_LENGTH
            detail = f"the prompt does not fit the model's context ({detail})"
        elif kind is ErrorKind.BAD_REQUEST and has_media(messages):
            kind = ErrorKind.UNSUPPORTED_MEDIA
            detail = f"server rejected a request with media ({detail})"
        return ProviderError(
            kind,
            detail,
            status=error.status_code,
            retry_after=_retry_after(error.response.headers),
            advice=advice,
        )

    def _parse(self, response: object) -> ModelOutput:
        choices = response.get("choices") if isinstance(response, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(response, dict) or not isinstance(message, dict):
            shown = response if isinstance(response, str) else json.dumps(response)
            raise ProviderError(
                ErrorKind.BAD_RESPONSE,
                f"{self.base_url} did not return a chat completion (got {shown[:120]!r})",
            )
        assert isinstance(first, dict)
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        text = message.get("content")
        calls = [_tool_call(tc) for tc in message.get("tool_calls") or [] if isinstance(tc, dict)]
        return ModelOutput(
            message=Message(
                role="assistant",
                content=[Text(text=text)] if isinstance(text, str) and text else [],
                tool_calls=calls,
            ),
            reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
            usage=_usage(response.get("usage")),
            finish_reason=_str_or_none(first.get("finish_reason")),
            response_id=_str_or_none(response.get("id")),
            model=_str_or_none(response.get("model")),
            logprobs=wire_logprobs(first),
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _tool_call(tc: dict[str, Any]) -> ToolCall:
    function = tc.get("function")
    function = function if isinstance(function, dict) else {}
    raw = function.get("arguments")
    if isinstance(raw, dict):  # a few servers send an object instead of a JSON string
        arguments, repaired, problem = raw, False, None
    else:
        arguments, repaired, problem = parse_arguments(raw if isinstance(raw, str) else "")
    return ToolCall(
        id=_str_or_none(tc.get("id")) or new_call_id(),
        name=_str_or_none(function.get("name")) or "",
        arguments=arguments,
        recovered=repaired,
        parse_error=problem,
    )


def _count(details: object, key: str) -> int:
    value = details.get(key) if isinstance(details, dict) else None
    return value if isinstance(value, int) else 0


def _usage(usage: object) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    return Usage(
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        reasoning_tokens=_count(usage.get("completion_tokens_details"), "reasoning_tokens"),
        cached_tokens=_count(usage.get("prompt_tokens_details"), "cached_tokens"),
    )


def create(spec: AdapterSpec) -> OpenAIAdapter:
    """The adapter for ``openai:``, ``vllm:``, ``ollama:`` and the other compatible aliases."""
    return OpenAIAdapter(spec)
