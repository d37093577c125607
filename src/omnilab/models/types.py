"""Messages, tool calls, tool specs, generation settings and model outputs.

All are pydantic models that round-trip through JSON, so trajectories, caches and scripted
models store them as they are.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from omnilab._ids import new_id
from omnilab.content import Content, Text, as_parts
from omnilab.models.token_trace import TokenTrace

__all__ = [
    "GenerateConfig",
    "Message",
    "ModelOutput",
    "ResponseFormat",
    "Role",
    "TokenLogprob",
    "ToolCall",
    "ToolSpec",
    "TopLogprob",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]

Parts = Annotated[list[Content], BeforeValidator(as_parts)]


def new_call_id() -> str:
    """A fresh tool-call id for calls a provider did not name (recovered or local calls)."""
    return f"call_{new_id()[:24]}"


class ToolCall(BaseModel):
    """A model's request to run one tool."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_call_id)
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    recovered: bool = False
    """True when the call was parsed out of the answer text rather than sent as a native call."""
    parse_error: str | None = None
    """Set when the provider sent arguments that are not a JSON object; ``arguments`` is then
    empty and this says why, so the tool layer can answer ``INVALID_ARGS`` to the model."""


class ToolSpec(BaseModel):
    """What a model is told about a tool: name, description and a JSON schema of its arguments."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Message(BaseModel):
    """One chat turn. ``content`` accepts a string or a single part as shorthand for a list."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: Parts = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    """For ``role="tool"``: the id of the call this message answers."""

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message."""
        return cls(role="system", content=[Text(text=text)])

    @classmethod
    def user(cls, *parts: str | Content) -> Message:
        """A user message from text and media parts, in order."""
        return cls(role="user", content=[Text(text=p) if isinstance(p, str) else p for p in parts])

    @classmethod
    def assistant(cls, text: str = "", *, tool_calls: list[ToolCall] | None = None) -> Message:
        """An assistant message (text and/or tool calls)."""
        content: list[Content] = [Text(text=text)] if text else []
        return cls(role="assistant", content=content, tool_calls=tool_calls or [])

    @classmethod
    def tool(cls, call_id: str, *parts: str | Content) -> Message:
        """The result of tool call ``call_id``."""
        return cls(
            role="tool",
            content=[Text(text=p) if isinstance(p, str) else p for p in parts],
            tool_call_id=call_id,
        )

    @property
    def text(self) -> str:
        """The text parts joined by newlines (media parts are skipped)."""
        return "\n".join(p.text for p in self.content if isinstance(p, Text))


class ResponseFormat(BaseModel):
    """Structured output: the answer must be JSON matching ``json_schema``.

    ``GenerateConfig(response_format=...)`` also takes a bare JSON schema (a dict without a
    ``json_schema`` key) or a pydantic model class, and wraps it in this.
    """

    model_config = ConfigDict(frozen=True)

    json_schema: dict[str, Any]
    """The JSON schema the answer must satisfy."""
    name: str = Field(default="response", pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    """A name for the schema (OpenAI's ``json_schema.name``)."""
    strict: bool = False
    """OpenAI's strict mode (the schema must then close every object and require every key);
    vLLM, SGLang and the local model always constrain decoding to the schema."""


def _as_response_format(value: object) -> object:
    if isinstance(value, type) and issubclass(value, BaseModel):
        return ResponseFormat(json_schema=value.model_json_schema(), name=value.__name__)
    if isinstance(value, dict) and "json_schema" not in value:
        return ResponseFormat(json_schema=value)
    return value


class GenerateConfig(BaseModel):
    """Sampling and request settings of one call. Unset fields use the provider's defaults."""

    model_config = ConfigDict(frozen=True)

    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    stop: list[str] | None = None
    seed: int | None = None
    send_seed: bool = True
    """``False``: a call that sets no ``seed`` goes without one, not even the run's (presets of
    released code that sends none); by default such a call takes the run's seed."""
    text_parts: bool = False
    """Send a system or user message of text only as its list of text parts, as released code
    that builds such lists does (the server's chat template then writes the parts as it does:
    Qwen2.5-Omni's one after another); by default one string, the parts joined by newlines,
    which every server takes."""
    audio_url: bool = False
    """Send a whole WAV or MP3 file as vLLM's ``{"type": "audio_url"}`` data URL, as released
    code built for vLLM does; by default OpenAI's ``input_audio``, which more servers take."""
    keep_think: bool = False
    """Leave ``<think>`` blocks in the reply's text as the server sent it (``reasoning`` then
    holds only what the server sent apart), as released code that reads the content verbatim
    does; by default they are moved into ``ModelOutput.reasoning`` and the answer stripped."""
    tool_choice: str | None = None
    """``auto``, ``none``, ``required`` or a tool name that must be called."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Sent as-is in the request body (e.g. ``chat_template_kwargs`` for vLLM/SGLang)."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Seconds one attempt may take; ``None`` uses ``models.timeout_s``. Not part of cache keys."""
    response_format: Annotated[ResponseFormat | None, BeforeValidator(_as_response_format)] = None
    """Constrain the answer to JSON matching a schema (a :class:`ResponseFormat`, a bare JSON
    schema or a pydantic model class); the answer text is then the JSON."""
    logprobs: bool = False
    """Return the log probability of each generated token in ``ModelOutput.logprobs``."""
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    """Also return this many most likely alternatives per token (implies ``logprobs``)."""

    @model_validator(mode="before")
    @classmethod
    def _top_implies_logprobs(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and data.get("top_logprobs") is not None
            and "logprobs" not in data
        ):
            return {**data, "logprobs": True}
        return data


class Usage(BaseModel):
    """Token counts of one call, or totals over many."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of ``completion_tokens`` spent on reasoning, when the provider reports it."""
    cached_tokens: int = 0
    """Part of ``prompt_tokens`` served from the provider's prompt cache."""

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )


class TopLogprob(BaseModel):
    """One likely token at a position, with its log probability."""

    token: str
    logprob: float


class TokenLogprob(BaseModel):
    """One generated token: its log probability and, when asked, the likeliest alternatives."""

    token: str
    logprob: float
    top_logprobs: list[TopLogprob] = Field(default_factory=list)


class ModelOutput(BaseModel):
    """What one model call returned."""

    message: Message = Field(default_factory=lambda: Message(role="assistant"))
    reasoning: str | None = None
    """Reasoning text, from ``reasoning_content`` or split out of ``<think>`` blocks."""
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    """Seconds of the successful attempt (0 for cache hits)."""
    finish_reason: str | None = None
    response_id: str | None = None
    model: str | None = None
    """The model name the provider reported."""
    cached: bool = False
    """True when served from the response cache (no request was made)."""
    logprobs: list[TokenLogprob] | None = None
    """Per generated token, when ``GenerateConfig.logprobs`` asked for them and the provider
    reports them; ``None`` otherwise."""
    tokens: TokenTrace | None = None
    """The prompt's and the sample's token ids with their logprobs, when the call went through
    a token-exact adapter (:func:`omnilab.models.tokens.token_exact`); ``None`` otherwise."""

    @property
    def text(self) -> str:
        """The answer text."""
        return self.message.text

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the model asked for."""
        return self.message.tool_calls

    @classmethod
    def from_text(
        cls, text: str, *, reasoning: str | None = None, usage: Usage | None = None
    ) -> ModelOutput:
        """An output that answers ``text`` (for scripted models and tests)."""
        return cls(
            message=Message.assistant(text),
            reasoning=reasoning,
            usage=usage or Usage(),
            finish_reason="stop",
        )

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        text: str = "",
        call_id: str | None = None,
        usage: Usage | None = None,
    ) -> ModelOutput:
        """An output that calls tool ``name`` with ``arguments`` (for scripted models and tests)."""
        call = ToolCall(name=name, arguments=arguments or {}, id=call_id or new_call_id())
        return cls(
            message=Message.assistant(text, tool_calls=[call]),
            usage=usage or Usage(),
            finish_reason="tool_calls",
        )
