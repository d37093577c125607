"""The small types of the run session (:mod:`omnilab.agents.session`): a conversation, one tool
call's outcome, one turn's tool results, and how a reply that writes a call out is recognised."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field

from omnilab.agents.answer import looks_like_tool_call
from omnilab.models.types import Message, ToolCall
from omnilab.tools.base import ToolResult
from omnilab.trajectory import ToolResultEvent

__all__ = ["Context", "ToolOutcome", "ToolRound", "writes_a_call"]


@dataclass
class Context:
    """One conversation of a run: its id, the role it talks to, and its messages so far."""

    id: str
    role: str
    messages: list[Message] = field(default_factory=list)
    last_call_id: str | None = None
    """The latest model call in this context (the parent of what follows it)."""


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call and what went back to the model."""

    call: ToolCall
    result: ToolResult
    event: ToolResultEvent


@dataclass(frozen=True)
class ToolRound:
    """The results of one turn's tool calls, in the calls' order."""

    outcomes: list[ToolOutcome]
    terminal: ToolOutcome | None = None
    """The first call of a terminal tool that succeeded: the scaffold should end the run."""


def writes_a_call(text: str, tool_names: Collection[str]) -> bool:
    """Whether ``text`` is a tool call written out: a call tag, a JSON ``arguments`` key, or a
    JSON object naming one of the tools."""
    if looks_like_tool_call(text):
        return True
    stripped = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    try:
        data = json.loads(stripped)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("name") in tool_names
