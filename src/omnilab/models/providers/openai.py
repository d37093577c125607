"""``openai`` and its aliases: any OpenAI-compatible chat-completions endpoint.

Serves OpenAI, vLLM, SGLang, Ollama, llama.cpp servers, OpenRouter, DeepSeek and Gemini's
compatible endpoint by base URL and key. Requests go out as plain JSON POSTs
(:mod:`omnilab.models.providers.openai_http`, which says why not the SDK); the Model wrapper
retries.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from omnilab.content import Text
from omnilab.models.adapter import AdapterSpec
from omnilab.models.errors import ErrorKind, ModelConfigError, ProviderError, kind_for_status
from omnilab.models.parsing import parse_arguments
from omnilab.models.providers.openai_http import ChatHTTP, HTTPStatusError, retry_after
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
from omnilab.models.providers.wire_body import StreamedBody, materialize, stream_body
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

# Servers without authentication (vLLM, Ollama, ...) accept any key: a placeholder is sent.
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

# Providers whose servers take a schema as {"type": "json_object", "schema": ...}: both llama.cpp
# servers (the C++ llama-server and llama-cpp-python's) read that form, and llama-cpp-python's
# refuses the "json_schema" type with a 422.
_SCHEMA_IN_JSON_OBJECT = frozenset({"llamacpp-server"})


class OpenAIAdapter:
    """One model on one OpenAI-compatible endpoint."""

    def __init__(self, spec: AdapterSpec) -> None:
        if spec.base_url is None:
            raise ModelConfigError(
                spec.name, "no base URL", advice="add @http://host:port/v1 to the model name"
            )
        self.name = spec.name
        self.provider = spec.provider
        self.model_id = spec.model
        self.base_url = spec.base_url
        self.endpoint = spec.base_url
        self.capabilities = spec.capabilities
        self._api_key = spec.api_key or _NO_KEY
        self._key_hint = spec.key_hint
        self.secrets: tuple[str, ...] = (spec.api_key,) if spec.api_key else ()
        self._timeout_s = spec.settings.timeout_s
        self._http = ChatHTTP(spec.base_url, self._api_key)

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> dict[str, Any]:
        """The JSON body of one ``/chat/completions`` request (media payloads included)."""
        return materialize(self._body(messages, tools, config))  # type: ignore[no-any-return]

    def streamed_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> StreamedBody:
        """The same body's bytes as pieces, its media read from their files while sending."""
        return stream_body(self._body(messages, tools, config))

    def _body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> dict[str, Any]:
        wire = wire_messages(
            messages,
            self.capabilities,
            self.name,
            files=True,
            text_parts=config.text_parts,
            audio_url=config.audio_url,
        )
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
            body["response_format"] = (
                {"type": "json_object", "schema": fmt.json_schema}
                if self.provider in _SCHEMA_IN_JSON_OBJECT
                else wire_response_format(fmt)
            )
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
        body: dict[str, Any] | StreamedBody
        if has_media(messages):
            # Cutting and encoding media blocks; keep the event loop free meanwhile. The
            # encoded parts stay in their files until they are sent: no copy of the media is
            # held for the request.
            body = await asyncio.to_thread(self.streamed_body, messages, tools, config)
        else:
            body = self._body(messages, tools, config)
        timeout = config.timeout_s or self._timeout_s
        try:
            response = await self._http.post(body, timeout_s=timeout)
        except HTTPStatusError as e:
            # The request's top-level fields (a streamed body's are those of the same request
            # without its messages: media never add one).
            fields = set(body if isinstance(body, dict) else self._body([], tools, config))
            raise self._status_error(e, messages, fields) from None
        return self._parse(response)

    def _status_error(
        self, error: HTTPStatusError, messages: Sequence[Message], fields: set[str]
    ) -> ProviderError:
        kind = kind_for_status(error.status)
        detail = error.detail()
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
        elif kind is ErrorKind.SERVER and has_media(messages) and _media_refusal(detail):
            # a server's known crash on content parts it cannot read: the same request fails
            # the same way, so it is not retried
            kind = ErrorKind.UNSUPPORTED_MEDIA
            reason = detail.split('  File "')[0].strip()
            detail = f"the server cannot read the request's media ({reason})"
        elif (refused := _refused_feature(kind, detail, fields)) is not None:
            # Not retried: the same request fails the same way (llama-cpp-python's server
            # answers a field it cannot validate with a 500 and a traceback; keep the reason).
            kind = ErrorKind.BAD_REQUEST
            reason = detail.split('  File "')[0].strip()
            detail = f"the server does not take {refused} as sent ({reason})"
            advice = _FEATURE_ADVICE[refused].format(name=self.name, provider=self.provider)
        return ProviderError(
            kind,
            detail,
            status=error.status,
            retry_after=retry_after(error.headers),
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


# A 4xx that names a field of the request we sent: the server lacks that feature.
_FEATURE_ADVICE = {
    "response_format": (
        "if it is a llama.cpp server, name the model llamacpp-server:...; otherwise turn the "
        'flag off in omnilab.toml: [models.capabilities] "{provider}:*" = {{ json_schema = false }}'
    ),
    "tools": (
        'turn native tool calls off in omnilab.toml: [models.capabilities] "{provider}:*" = '
        "{{ tool_calls = false }}"
    ),
    "logprobs": "ask this model for no logprobs (drop logprobs/top_logprobs), or serve it with them",
    "top_logprobs": "ask for no top_logprobs, or serve the model with them",
}


# What servers say (often in a 500) when a chat template or model cannot take content parts:
# llama-cpp-python's text-only chat formats add a list of parts to a string.
_MEDIA_REFUSALS = (
    'can only concatenate str (not "list") to str',
    "image input is not supported",
    "does not support image",
    "is not a multimodal model",
)


def _media_refusal(detail: str) -> bool:
    lowered = detail.lower()
    return any(phrase in lowered for phrase in _MEDIA_REFUSALS)


def _refused_feature(kind: ErrorKind, detail: str, fields: set[str]) -> str | None:
    lowered = detail.lower()
    if kind is not ErrorKind.BAD_REQUEST and "validation error" not in lowered:
        return None
    return next((f for f in _FEATURE_ADVICE if f in fields and f in lowered), None)


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
