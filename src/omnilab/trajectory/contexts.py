"""What each model of a run saw: the input of every model call, and each context's conversation.

Schema 2 records every call's input as it was sent, so :func:`call_contexts` only reads it back.
Schema-1 files kept a summary of the input; for them the agent's one conversation is rebuilt
from the added messages, replies and tool results (``exact=False``), and side calls (a
perception tool's own model) cannot be rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omnilab.content import Text
from omnilab.models.events import ModelCallEvent
from omnilab.models.types import Message, ModelOutput, ToolSpec
from omnilab.trajectory.events import (
    ContextEdit,
    Event,
    MessageAdded,
    ToolResultEvent,
    tool_message,
)

__all__ = [
    "CallContext",
    "advance",
    "call_contexts",
    "conversation",
    "main_context_id",
    "with_reasoning",
]


@dataclass(frozen=True)
class CallContext:
    """One model call with exactly the messages and tools it was sent."""

    call: ModelCallEvent
    messages: list[Message]
    tools: list[ToolSpec]
    exact: bool = True
    """False for schema-1 files, whose inputs are rebuilt from the conversation."""

    @property
    def context_id(self) -> str | None:
        """The conversation the call belongs to."""
        return self.call.context_id

    @property
    def role(self) -> str | None:
        """The role the model was bound to (``agent``, ``perception``, ...)."""
        return self.call.role

    @property
    def output(self) -> ModelOutput | None:
        """The reply, reasoning and logprobs included; ``None`` when the call failed."""
        return self.call.output

    @property
    def reasoning(self) -> str | None:
        """The reply's reasoning (``reasoning_content`` or ``<think>`` text)."""
        return self.call.output.reasoning if self.call.output is not None else None


def _v1_conversation(events: Sequence[Event], model: str | None = None) -> list[Message]:
    # Schema 1: a call belongs to the agent's conversation when it was sent all of it so far.
    out: list[Message] = []
    for event in events:
        if isinstance(event, MessageAdded):
            out.append(event.message)
        elif isinstance(event, ToolResultEvent):
            out.append(tool_message(event.call_id, event.result))
        elif (
            isinstance(event, ModelCallEvent)
            and event.output is not None
            and event.input.messages == len(out)
            and (model is None or event.model == model)
        ):
            out.append(event.output.message)
    return out


def call_contexts(events: Sequence[Event]) -> list[CallContext]:
    """Every model call with its input, in order (schema-1 side calls are left out)."""
    found: list[CallContext] = []
    v1: list[Message] = []
    for event in events:
        if isinstance(event, ModelCallEvent) and event.sent is not None:
            found.append(CallContext(event, list(event.sent.messages), list(event.sent.tools)))
            continue
        # Schema 1, rebuilt as the conversation goes.
        if isinstance(event, MessageAdded):
            v1.append(event.message)
        elif isinstance(event, ToolResultEvent):
            v1.append(tool_message(event.call_id, event.result))
        elif isinstance(event, ModelCallEvent) and event.input.messages == len(v1):
            found.append(CallContext(event, list(v1), [], exact=False))
            if event.output is not None:
                v1.append(event.output.message)
    return found


def main_context_id(events: Sequence[Event]) -> str | None:
    """The agent's main conversation: the context of the first ``agent`` call (else the first
    call's); ``None`` for schema-1 files."""
    first: str | None = None
    for event in events:
        if isinstance(event, ModelCallEvent) and event.context_id is not None:
            if event.role == "agent":
                return event.context_id
            first = first or event.context_id
    return first


def advance(messages: list[Message], event: Event) -> list[Message]:
    """The messages of a context after ``event`` (one of that context's events): a model call
    resets them to its recorded input plus its reply, an added message or a tool result is
    appended, an edit is applied. The one rule the viewer, the writer and the reader share."""
    if isinstance(event, ModelCallEvent):
        out = list(event.sent.messages) if event.sent is not None else messages
        return [*out, event.output.message] if event.output is not None else out
    if isinstance(event, MessageAdded):
        messages.append(event.message)
    elif isinstance(event, ToolResultEvent):
        messages.append(tool_message(event.call_id, event.result, sent_as=event.sent_as))
    elif isinstance(event, ContextEdit):
        messages[event.start : event.end] = event.replacement
    return messages


def conversation(
    events: Sequence[Event], context_id: str | None = None, *, model: str | None = None
) -> list[Message]:
    """The message list of one context at the end of the run (default: the main one): each
    call's recorded input and reply, with what was added, answered or edited after it.

    Schema-1 files have one conversation, rebuilt from message counts (``model`` keeps the
    turns of one model name there)."""
    target = context_id or main_context_id(events)
    if target is None:
        return _v1_conversation(events, model)
    out: list[Message] = []
    for event in events:
        if event.context_id == target:
            out = advance(out, event)
    return out


def with_reasoning(messages: Sequence[Message], events: Sequence[Event]) -> list[Message]:
    """``messages`` with each reply's reasoning put back before its text as ``<think>...</think>``
    (how chat templates of reasoning models write it), for training export and reading."""
    replies = [
        (e.output.message, e.output.reasoning)
        for e in events
        if isinstance(e, ModelCallEvent) and e.output is not None and e.output.reasoning
    ]
    by_id = {id(m): r for m, r in replies}
    out: list[Message] = []
    for message in messages:
        thought = by_id.get(id(message))
        if thought is None and message.role == "assistant":
            thought = next((r for m, r in replies if m == message), None)
        if thought is None:
            out.append(message)
            continue
        think = Text(text=f"<think>\n{thought}\n</think>")
        out.append(message.model_copy(update={"content": [think, *message.content]}))
    return out
