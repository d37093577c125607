"""A compact text view of a trajectory: one short line per thought, call, observation, answer."""

from __future__ import annotations

import json
from typing import Any, assert_never

from omnilab.content import Content, Text
from omnilab.models.events import ModelCallEvent
from omnilab.plural import plural
from omnilab.terminal import inert
from omnilab.trajectory.contexts import main_context_id
from omnilab.trajectory.events import (
    AnswerEvent,
    ContextEdit,
    ErrorEvent,
    MessageAdded,
    RunEnd,
    RunStart,
    StepNote,
    StepScore,
    ToolResultEvent,
)
from omnilab.trajectory.store import Trajectory

__all__ = ["render_text"]

_INDENT = "    "


def _one_line(text: str, width: int) -> str:
    """``text`` on one line (its indent kept), cut to ``width`` characters with an ellipsis."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    flat = indent + " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def _media(parts: list[Content]) -> str:
    """A count of the media parts, e.g. ``[3 images, 1 audio]``."""
    counts: dict[str, int] = {}
    for part in parts:
        if not isinstance(part, Text):
            counts[part.type] = counts.get(part.type, 0) + 1
    if not counts:
        return ""
    shown = [f"{n} {kind}{'s' if n > 1 and kind != 'audio' else ''}" for kind, n in counts.items()]
    return f"[{', '.join(shown)}]"


def _start(event: RunStart, width: int) -> list[str]:
    models = " ".join(f"{role}={name}" for role, name in event.models.items())
    lines = [
        _one_line(f"run {event.run_id}  task {event.task_id or '-'}  agent {event.agent}", width),
        _one_line(f"question: {event.question}", width),
    ]
    if models:
        lines.append(_one_line(f"models: {models}", width))
    if event.inputs:
        listed = ", ".join(f"{f.id} ({f.kind}, {f.path.name})" for f in event.inputs)
        lines.append(_one_line(f"inputs: {listed}", width))
    return lines


def _message(event: MessageAdded, width: int) -> str:
    msg = event.message
    body = " ".join(x for x in (msg.text, _media(msg.content)) if x)
    return _one_line(f"{msg.role}: {body or '(empty)'}", width)


def _model_call(event: ModelCallEvent, step: int, width: int) -> list[str]:
    if event.output is None:
        kind = f" ({event.error_kind})" if event.error_kind else ""
        return [_one_line(f"[{step}] model error{kind}: {event.error or 'unknown'}", width)]
    out = event.output
    lines: list[str] = []
    head = f"[{step}] "
    if out.reasoning:
        lines.append(_one_line(f"{head}think: {out.reasoning}", width))
        head = _INDENT
    if out.text:
        lines.append(_one_line(f"{head}say: {out.text}", width))
        head = _INDENT
    for call in out.tool_calls:
        mark = " (recovered from text)" if call.recovered else ""
        lines.append(_one_line(f"{head}call {call.name}({_args(call.arguments)}){mark}", width))
        head = _INDENT
    if not lines:
        lines.append(f"{head}(empty reply)")
    return lines


def _tool_result(event: ToolResultEvent, width: int) -> str:
    result = event.result
    if result.error is not None:
        body = f"error [{result.error.code}] {result.error.message}"
    else:
        shown = " | ".join(line for line in result.text.splitlines() if line.strip())
        body = " ".join(x for x in (_media(result.content), shown) if x) or "(no output)"
    via = " (as user message)" if event.sent_as == "user" else ""
    return _one_line(f"{_INDENT}-> {event.name} {event.duration_s:.1f}s{via}: {body}", width)


def _edit(event: ContextEdit, width: int) -> str:
    what = "purged" if not event.replacement else f"replaced by {len(event.replacement)}"
    why = f" ({event.reason})" if event.reason else ""
    span = f"messages {event.start}-{event.end - 1}" if event.end > event.start else "nothing"
    return _one_line(f"{_INDENT}context {event.context_id}: {span} {what}{why}", width)


def _end(event: RunEnd, width: int) -> str:
    usage = event.usage
    return _one_line(
        f"end: {event.status}, {plural(event.turns, 'turn')}, {usage.total_tokens} tokens "
        f"({usage.prompt_tokens} in, {usage.completion_tokens} out), {event.wall_s:.1f}s",
        width,
    )


def render_text(traj: Trajectory, *, width: int = 100) -> str:
    """The run step by step: thoughts, tool calls, short observations, the answer and totals.

    Each line is cut to ``width`` characters; control characters (escape sequences in model
    or program output) are shown as visible escapes (:func:`omnilab.terminal.inert`). Model calls that are not turns of the agent's
    main conversation (a perception tool's model, another context) are shown as ``side call``
    lines, with their role and context when the file records them (schema 2).
    """
    width = max(width, 20)
    main = main_context_id(traj.events)
    agent_turns = {id(m) for m in traj.messages()} if main is None else set()
    lines: list[str] = []
    step = 0
    for event in traj.events:
        if isinstance(event, RunStart):
            lines.extend(_start(event, width))
        elif isinstance(event, MessageAdded):
            lines.append(_message(event, width))
        elif isinstance(event, ModelCallEvent):
            if main is not None:
                turn = event.context_id == main
            else:
                turn = event.output is None or id(event.output.message) in agent_turns
            if turn:
                step += 1
                lines.extend(_model_call(event, step, width))
            else:
                reply = event.output.text if event.output is not None else f"error {event.error}"
                where = f" [{event.role} {event.context_id}]" if event.context_id else ""
                lines.append(_one_line(f"{_INDENT}side call {event.model}{where}: {reply}", width))
        elif isinstance(event, ToolResultEvent):
            lines.append(_tool_result(event, width))
        elif isinstance(event, AnswerEvent):
            forced = " (forced)" if event.forced else ""
            got = event.answer if event.answer is not None else "(none extracted)"
            lines.append(_one_line(f"answer{forced}: {got}", width))
        elif isinstance(event, ErrorEvent):
            lines.append(_one_line(f"error [{event.error_kind}]: {event.message}", width))
        elif isinstance(event, RunEnd):
            lines.append(_end(event, width))
        elif isinstance(event, ContextEdit):
            lines.append(_edit(event, width))
        elif isinstance(event, StepScore):
            lines.append(
                _one_line(
                    f"{_INDENT}score {event.name}={event.value:g} for {event.target_id}", width
                )
            )
        elif isinstance(event, StepNote):
            lines.append(_one_line(f"{_INDENT}{event.label}: {event.text}", width))
        else:
            assert_never(event)
    if traj.run_end is None:
        lines.append("(no end event: the run was cut off or is still running)")
    lines.extend(f"warning: {w}" for w in traj.warnings)
    # Model output and tool results are untrusted: no escape sequence reaches a terminal.
    return inert("\n".join(lines))
