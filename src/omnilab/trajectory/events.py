"""The events a run emits: one discriminated union, one versioned schema.

Every event has a ``kind`` (the discriminator), an ``id``, a ``timestamp``, and (schema 2) the
``parent_id`` of the event it follows from and the ``context_id`` of the conversation it belongs
to. The model call event is :class:`omnilab.models.events.ModelCallEvent` itself, so a
:class:`~omnilab.models.Model` writes straight into a trajectory by taking the writer as its sink;
it carries its input exactly as sent and its output whole, so every context can be rebuilt.

Schema 2 adds to schema 1 (which still reads): the full input, role and context of each model
call; parent ids; branch pointers on :class:`RunStart`; :class:`ContextEdit` and
:class:`StepScore`; and how a tool result went back (``sent_as``).
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, model_validator

from omnilab._ids import new_id
from omnilab.content import Content, Text
from omnilab.inputs import InputFile
from omnilab.models.events import ModelCallEvent
from omnilab.models.types import Message, Usage
from omnilab.tools.base import ToolResult

__all__ = [
    "SCHEMA_VERSION",
    "AnswerEvent",
    "ContextEdit",
    "ErrorEvent",
    "Event",
    "EventAdapter",
    "MessageAdded",
    "ModelCall",
    "RunEnd",
    "RunStart",
    "RunStatus",
    "StepNote",
    "StepScore",
    "ToolResultEvent",
    "tool_message",
]

SCHEMA_VERSION = 2
"""Version of the trajectory file format; bumped when an event changes incompatibly."""

RunStatus = Literal["answered", "no_answer", "error", "budget"]
"""How a run ended: with an answer, without one, on an error, or out of turns/tokens/time."""

ModelCall = ModelCallEvent
"""One model call (``kind="model_call"``): input as sent, output or error, usage, latency."""


class _Event(BaseModel):
    id: str = Field(default_factory=new_id)
    timestamp: float = Field(default_factory=time.time)
    """Unix time the event happened."""
    parent_id: str | None = None
    """The event this one follows from: a tool result's model call, a step's previous step."""
    context_id: str | None = None
    """The conversation (message list) the event belongs to, when it belongs to one."""


class RunStart(_Event):
    """The first event of a run: what was asked, with which inputs, by which agent and models."""

    kind: Literal["run_start"] = "run_start"
    run_id: str
    task_id: str | None = None
    question: str
    inputs: list[InputFile] = Field(default_factory=list)
    agent: str
    """The scaffold's name (``tir``, ``ota``, ...)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model names by role (``agent``, ``perception``, ``judge``, ...); never keys."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The agent's settings: budgets, tool names, prompt names."""
    parent_run_id: str | None = None
    """For a branch: the run it branched from (tree exploration, DPO pairs)."""
    parent_event_id: str | None = None
    """For a branch: the event of the parent run after which this run diverged."""


class MessageAdded(_Event):
    """A message the agent put into its context that no model or tool produced.

    The system prompt, the first user message, step notices and the forced-final prompt.
    """

    kind: Literal["message"] = "message"
    message: Message


class ToolResultEvent(_Event):
    """One tool call's outcome: ``result`` is exactly what was sent back to the model."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: ToolResult
    duration_s: float = 0.0
    sent_as: Literal["tool", "user"] = "tool"
    """Whether the result went back to the model as a tool message or as a user message."""


class AnswerEvent(_Event):
    """The run's final answer: the model's text and the extracted answer (``None`` if none)."""

    kind: Literal["answer"] = "answer"
    text: str
    answer: str | None = None
    forced: bool = False
    """True when the answer came after the forced-final prompt (budget exhausted)."""
    source: Literal["tag", "unclosed_tag", "whole_text"] | None = None
    """Where ``answer`` came from: a closed ``<answer>`` tag, a tag cut off at the end, or the
    whole message (no tag: scorers that need a tagged answer should treat it as untagged)."""


class ErrorEvent(_Event):
    """Something went wrong that the run could not recover from inside the loop."""

    kind: Literal["error"] = "error"
    error_kind: str
    """What failed: ``model``, ``tool``, ``budget``, ``internal``, or a finer code."""
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
    """Machine-readable extras (a traceback, the failing model's name); never secrets."""

    @model_validator(mode="before")
    @classmethod
    def _kind_alias(cls, data: Any) -> Any:
        # ``kind`` is every event's discriminator; callers that write ErrorEvent(kind="model")
        # mean the error's kind, which is kept in ``error_kind``.
        if isinstance(data, dict) and data.get("kind", "error") != "error":
            data = dict(data)
            data.setdefault("error_kind", data.pop("kind"))
        return data


class ContextEdit(_Event):
    """A scaffold changed messages already in a context: ``messages[start:end]`` became
    ``replacement`` (empty for a purge), e.g. OmniAgent's memory placeholders for old media."""

    kind: Literal["context_edit"] = "context_edit"
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    replacement: list[Message] = Field(default_factory=list)
    reason: str = ""


class StepScore(_Event):
    """A reward or grade for one step (``target_id``: usually a model call), e.g. a process
    reward in {-1, 0, +1} or a verifier's verdict on a branch."""

    kind: Literal["step_score"] = "step_score"
    target_id: str
    value: float
    name: str = "reward"
    """What the score is (``reward``, ``verifier``, a rubric's name)."""
    details: dict[str, Any] = Field(default_factory=dict)


class StepNote(_Event):
    """What a scaffold wants a reader to see about a step, beyond messages and calls.

    E.g. OmniAgent's observation and confidence of a turn, a master agent's sub-questions or
    decision of a round. ``label`` names it (``turn``, ``decision``), ``text`` is one short line
    for live views and ``trace``, ``data`` the structured values. It never changes a context.
    """

    kind: Literal["note"] = "note"
    label: str
    text: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


class RunEnd(_Event):
    """The last event of a run."""

    kind: Literal["run_end"] = "run_end"
    status: RunStatus
    usage: Usage = Field(default_factory=Usage)
    """Tokens of every model call of the run (perception and judge models included)."""
    wall_s: float
    turns: int
    stats: dict[str, float] = Field(default_factory=dict)
    """Per-run figures the scaffold reports (``AgentRun.stats``, e.g. a master agent's
    ``rounds``); ``omnilab metrics`` averages each over the tasks that report it."""


Event = Annotated[
    RunStart
    | MessageAdded
    | ModelCallEvent
    | ToolResultEvent
    | AnswerEvent
    | ErrorEvent
    | ContextEdit
    | StepScore
    | StepNote
    | RunEnd,
    Field(discriminator="kind"),
]
"""Any trajectory event, told apart by ``kind``."""

EventAdapter: TypeAdapter[Event] = TypeAdapter(Event)
"""Validates and serialises one :data:`Event` (``EventAdapter.validate_json(line)``)."""


def tool_message(
    call_id: str, result: ToolResult, *, sent_as: Literal["tool", "user"] = "tool"
) -> Message:
    """The message that carries ``result`` to the model, as agents send it.

    An error becomes its one line (``Error [TS_OOB]: ...``); otherwise the content goes as it is
    (a result with no content says so, since some providers reject empty tool messages).
    ``sent_as="user"`` gives a user message instead (scaffolds whose model writes its actions as
    text, e.g. OmniAgent's JSON actions, have no tool calls to answer).
    """
    if result.error is not None:
        content: list[Content] = [Text(text=result.text)]
    else:
        content = list(result.content) or [Text(text="(no output)")]
    if sent_as == "user":
        return Message(role="user", content=content)
    return Message(role="tool", content=content, tool_call_id=call_id)
