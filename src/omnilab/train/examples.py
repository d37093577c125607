"""Training examples from a rollout: the exact contexts the model saw, and which turns to train.

The loss mask is OmniGAIA's eq. 2 (§4.1): the loss covers only the tokens the agent generated;
system text, the user's question and tool observations are masked. Here a message is *trained*
when it is an assistant message the agent's model itself returned (it equals the output of one
of the context's recorded calls); anything else, including an assistant message a scaffold wrote
itself, is context only.

How a rollout becomes examples:

* A context whose calls each saw the previous call's input and reply unchanged (``tir``: the
  conversation only grows) gives **one example**: the last call's input plus its reply, every
  reply of the agent trained.
* A context that was edited between calls (``ota`` purges earlier media into placeholders, so a
  later call no longer holds what an earlier reply was written against) gives **one example per
  call**: that call's exact input, purged placeholders included, plus its reply, and only that
  reply trained. ``per_call=True`` asks for this for every context.
* Which contexts: those of the ``agent`` role (the main loop; perception and judge side calls are
  other models' work). A run with no ``agent`` call (``master``: ``master`` and per-modality
  roles) gives every context of the run, each one by the rules above.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from omnilab.content import Text
from omnilab.models import Message, ToolSpec
from omnilab.train.runs import RunRecord
from omnilab.trajectory import CallContext

__all__ = ["Example", "context_calls", "examples", "is_append_only"]


@dataclass(frozen=True)
class Example:
    """One training example: a chat, a train/mask flag per message, the tools it offered."""

    record: RunRecord
    context_id: str | None
    messages: list[Message]
    """The call's input exactly as sent, then the reply."""
    trained: list[bool]
    """Per message: whether the loss covers it (the agent's own replies only)."""
    tools: list[ToolSpec]
    calls: list[CallContext]
    """The model calls the example covers, in order (one for a per-call example)."""
    step: int | None = None
    """1-based index of the call in its context, for a per-call example."""


def context_calls(contexts: list[CallContext]) -> dict[str | None, list[CallContext]]:
    """The calls to export, by context id, in order: ``agent`` contexts, else every context."""
    done = [c for c in contexts if c.output is not None]
    agent = [c for c in done if c.role == "agent"]
    groups: dict[str | None, list[CallContext]] = {}
    for call in agent or done:
        groups.setdefault(call.context_id, []).append(call)
    return groups


def _key(message: Message) -> str:
    return message.model_dump_json(exclude={"tool_call_id"})


def is_append_only(calls: list[CallContext]) -> bool:
    """Whether every call's input and reply open the next call's input unchanged."""
    for before, after in pairwise(calls):
        seen = [*before.messages, _reply(before)]
        if len(after.messages) < len(seen):
            return False
        if any(_key(a) != _key(b) for a, b in zip(seen, after.messages, strict=False)):
            return False
    return True


def _reply(call: CallContext) -> Message:
    assert call.output is not None  # context_calls keeps answered calls only
    return call.output.message


def _with_reasoning(message: Message, reasoning: str | None) -> Message:
    # Reasoning models' chat templates write the thought before the answer as <think>...</think>
    # (the same rule as Trajectory.messages(reasoning=True)); the input never held it.
    if not reasoning:
        return message
    text = f"<think>\n{reasoning}\n</think>\n\n"
    content = list(message.content)
    if content and isinstance(content[0], Text):
        content[0] = Text(text=text + content[0].text)
    else:
        content.insert(0, Text(text=text.rstrip("\n")))
    return message.model_copy(update={"content": content})


def _one(record: RunRecord, calls: list[CallContext], reasoning: bool, step: int | None) -> Example:
    last = calls[-1]
    thoughts = {_key(_reply(c)): c.reasoning for c in calls}
    messages: list[Message] = []
    trained: list[bool] = []
    own = set(thoughts) if step is None else {_key(_reply(last))}
    for message in [*last.messages, _reply(last)]:
        mine = message.role == "assistant" and _key(message) in own
        if mine and step is not None and message is not _reply(last):
            mine = False  # a per-call example trains only the reply of its own call
        if mine and reasoning:
            message = _with_reasoning(message, thoughts.get(_key(message)))
        messages.append(message)
        trained.append(mine)
    return Example(
        record=record,
        context_id=last.context_id,
        messages=messages,
        trained=trained,
        tools=list(last.tools),
        calls=list(calls),
        step=step,
    )


def examples(
    record: RunRecord, *, per_call: bool = False, reasoning: bool = False
) -> Iterator[Example]:
    """The examples of one rollout (see the module docstring)."""
    for calls in context_calls(record.trajectory.contexts()).values():
        if not per_call and is_append_only(calls):
            yield _one(record, calls, reasoning, None)
            continue
        for i in range(len(calls)):
            yield _one(record, calls[: i + 1], reasoning, i + 1)
