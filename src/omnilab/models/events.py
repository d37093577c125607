"""The event every model call emits: its input exactly as sent, a summary of it, and the output.

Events go to an optional sink (any callable taking one event); the trajectory layer consumes
them. They carry no API keys. ``sent`` holds the messages, tools and settings of the call as
they were handed to the provider; the trajectory writer stores its media by path and hash
(never inline bytes) and each context's messages once (see :mod:`omnilab.trajectory`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from omnilab._ids import new_id
from omnilab.content import Text
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage

__all__ = ["CallInput", "EventSink", "InputSummary", "ModelCallEvent", "summarize_input"]

_PREVIEW_CHARS = 200


class InputSummary(BaseModel):
    """What was sent, without media bytes: counts by role and content kind, and a text preview."""

    messages: int
    roles: dict[str, int]
    parts: dict[str, int]
    """Content parts by kind (``text``, ``image``, ...)."""
    media: list[str] = Field(default_factory=list)
    """Names of media parts (file names, with time ranges)."""
    tools: list[str] = Field(default_factory=list)
    last_user_text: str = ""
    """The start of the last user message's text."""


class CallInput(BaseModel):
    """Exactly what one call sent: the messages, the tools offered and the settings."""

    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    config: GenerateConfig = Field(default_factory=GenerateConfig)
    media: dict[str, str] = Field(default_factory=dict)
    """SHA-256 of each media file the messages refer to, by path (filled by the trajectory
    writer; empty on a live event)."""


class ModelCallEvent(BaseModel):
    """One call of a :class:`~omnilab.models.Model`: input summary, output or error, accounting."""

    kind: Literal["model_call"] = "model_call"
    id: str = Field(default_factory=new_id)
    timestamp: float = Field(default_factory=time.time)
    """Unix time the call ended."""
    model: str
    """The model name as configured (``provider:model[@base_url]``; never a key)."""
    input: InputSummary
    sent: CallInput | None = None
    """The full input as sent (``None`` in schema-1 trajectories, which kept the summary only)."""
    role: str | None = None
    """The role the model was bound to in the run (``agent``, ``perception``, ``judge``, ...)."""
    context_id: str | None = None
    """The conversation this call belongs to; calls of one context extend one message list."""
    parent_id: str | None = None
    """The event this call follows from (set by the run session)."""
    output: ModelOutput | None = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float
    """Seconds from the call to its end, waits between attempts included."""
    attempts: int
    cached: bool = False
    error: str | None = None
    error_kind: str | None = None


EventSink = Callable[[ModelCallEvent], None]


def _media_name(part: object) -> str:
    name = getattr(part, "name", "?")
    # Fields read from the instance dict: only audio and video have a span, and asking an
    # image for a missing attribute goes through pydantic's slow __getattr__ on every call.
    fields = getattr(part, "__dict__", {})
    start, end = fields.get("start"), fields.get("end")
    if start is None and end is None:
        return str(name)
    return f"{name}[{start or 0:g}-{'' if end is None else f'{end:g}'}]"


def summarize_input(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> InputSummary:
    """The summary of a call's input that events carry."""
    roles: dict[str, int] = {}
    parts: dict[str, int] = {}
    media: list[str] = []
    for message in messages:
        roles[message.role] = roles.get(message.role, 0) + 1
        for part in message.content:
            parts[part.type] = parts.get(part.type, 0) + 1
            if not isinstance(part, Text):
                media.append(_media_name(part))
    last_user = next((m for m in reversed(messages) if m.role == "user"), None)
    preview = last_user.text[:_PREVIEW_CHARS] if last_user is not None else ""
    return InputSummary(
        messages=len(messages),
        roles=roles,
        parts=parts,
        media=media,
        tools=[t.name for t in tools],
        last_user_text=preview,
    )
