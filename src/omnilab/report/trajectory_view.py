"""One trajectory as a page: the question and inputs, each context as a conversation (thoughts,
tool calls, results with their frames and audio, purged media as placeholders, notes, step
scores), the answer, the judge's verdicts, and timings and tokens per call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omnilab.bench.results import TaskResult
from omnilab.content import Audio, Content, Document, Image, Text, Video
from omnilab.models.events import ModelCallEvent
from omnilab.models.types import Message
from omnilab.report.html import esc, json_block
from omnilab.report.parts import Renderer, text_block, tool_call
from omnilab.trajectory import (
    AnswerEvent,
    ContextEdit,
    ErrorEvent,
    Event,
    MessageAdded,
    RunEnd,
    RunStart,
    StepNote,
    StepScore,
    ToolResultEvent,
    Trajectory,
)
from omnilab.trajectory.contexts import advance

__all__ = ["trajectory_body"]


def trajectory_body(
    trajectory: Trajectory, render: Renderer, *, result: TaskResult | None = None
) -> str:
    """The body of a trajectory page (without the page frame)."""
    start = trajectory.run_start
    out = [_header(trajectory, start, result, render)]
    if result is not None:
        out.append(_verdict(result))
    scores: dict[str, list[StepScore]] = {}
    for event in trajectory.events:
        if isinstance(event, StepScore):
            scores.setdefault(event.target_id, []).append(event)
    order: list[str | None] = []
    by_context: dict[str | None, list[Event]] = {}
    for event in trajectory.events:
        if isinstance(event, RunStart | RunEnd | StepScore):
            continue
        key = event.context_id
        if key not in by_context:
            order.append(key)
            by_context[key] = []
        by_context[key].append(event)
    for number, key in enumerate(order, start=1):
        out.append(_context(number, key, by_context[key], render, scores))
    if trajectory.warnings:
        out.append(
            '<section class="warn">' + "".join(f"<p>{esc(w)}</p>" for w in trajectory.warnings)
        )
        out.append("</section>")
    return "\n".join(out)


def _header(
    trajectory: Trajectory, start: RunStart | None, result: TaskResult | None, render: Renderer
) -> str:
    end = trajectory.run_end
    usage = trajectory.usage
    facts = [
        ("status", trajectory.status),
        ("agent", start.agent if start else "?"),
        ("models", ", ".join(f"{k}: {v}" for k, v in (start.models if start else {}).items())),
        ("turns", end.turns if end else "?"),
        ("wall time", f"{end.wall_s:.2f} s" if end else "?"),
        ("tokens", f"{usage.prompt_tokens:,} in / {usage.completion_tokens:,} out"),
        ("model calls", len(trajectory.model_calls)),
        ("tool calls", len(trajectory.tool_results)),
    ]
    if result is not None and result.metadata.level:
        facts.append(("level", result.metadata.level))
    if result is not None and result.metadata.category:
        facts.append(("category", result.metadata.category))
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts)
    question = text_block(start.question) if start else "<p>(no run start event)</p>"
    inputs = ""
    if start and start.inputs:
        items = []
        for f in start.inputs:
            part = _input_part(f.kind, f.path)
            shown = render.part(part) if part is not None else ""
            items.append(f'<div class="input"><b>{esc(f.id)}</b> ({esc(f.kind)}) {shown}</div>')
        inputs = f'<h3>Inputs</h3><div class="inputs">{"".join(items)}</div>'
    return (
        f'<section class="task-head"><h2>Question</h2>{question}{inputs}'
        f'<table class="facts">{rows}</table></section>'
    )


def _input_part(kind: str, path: object) -> Content | None:
    if not isinstance(path, Path):
        return None
    if kind == "image":
        return Image(path=path)
    if kind == "audio":
        return Audio(path=path)
    if kind == "video":
        return Video(path=path)
    return Document(path=path)


def _verdict(result: TaskResult) -> str:
    score = result.score
    state = _state(result)
    rows: list[tuple[str, object]] = [
        ("verdict", state),
        ("prediction", result.extracted if result.extracted is not None else result.prediction),
        ("expected", " | ".join(result.labels) if result.labels else None),
    ]
    if result.error:
        rows.append(("error", f"[{result.error_kind or 'error'}] {result.error}"))
    if score is not None:
        rows += [
            ("scorer", score.scorer),
            ("extracted", score.extracted),
            ("rule", score.reason),
            ("score", f"{score.value:g}"),
            ("exact match", score.exact_match),
            ("judge input", score.judge_input),
        ]
        if score.error:
            rows.append(("scoring error", score.error))
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows if v is not None)
    judges = ""
    if score is not None:
        for judge in score.judges:
            replies = "".join(text_block(r) for r in judge.replies)
            error = f'<p class="bad">{esc(judge.error)}</p>' if judge.error else ""
            judges += (
                f'<div class="judge"><b>{esc(judge.judge)}</b>: '
                f'<span class="state {esc(judge.verdict or "undecided")}">'
                f"{esc(judge.verdict or 'undecided')}</span>{error}{replies}</div>"
            )
    return (
        f'<section class="verdict {esc(state)}"><h2>Result</h2><table class="facts">{body}</table>'
        f"{judges}</section>"
    )


def _state(result: TaskResult) -> str:
    if result.error is not None:
        return "error"
    if result.judged is None:
        return "undecided"
    return "correct" if result.judged else "wrong"


def _context(
    number: int,
    key: str | None,
    events: Sequence[Event],
    render: Renderer,
    scores: dict[str, list[StepScore]],
) -> str:
    calls = [e for e in events if isinstance(e, ModelCallEvent)]
    roles = sorted({c.role or "?" for c in calls})
    models = sorted({c.model for c in calls})
    title = "Run events" if key is None else f"Context {number}"
    head = (
        f'<h2>{esc(title)}</h2><p class="muted">{esc(", ".join(roles) or "no model calls")}'
        f" · {esc(', '.join(models))} · {len(calls)} calls"
        + (f" · id {esc(key)}" if key else "")
        + "</p>"
    )
    messages: list[Message] = []
    items: list[str] = []
    for event in events:
        items.append(_event(event, messages, render, scores))
        if key is not None:
            messages = advance(messages, event)
    body = "".join(items)
    return f'<section class="context" data-context="{esc(key or "")}">{head}{body}</section>'


def _event(
    event: Event, messages: list[Message], render: Renderer, scores: dict[str, list[StepScore]]
) -> str:
    if isinstance(event, MessageAdded):
        return render.message(event.message)
    if isinstance(event, ModelCallEvent):
        return _call(event, messages, render, scores.get(event.id, []))
    if isinstance(event, ToolResultEvent):
        return _tool_result(event, render)
    if isinstance(event, ContextEdit):
        return _edit(event, messages, render)
    if isinstance(event, StepNote):
        data = json_block(event.data) if event.data else ""
        return (
            f'<div class="note"><span class="tag">{esc(event.label)}</span> '
            f"{esc(event.text)}{data}</div>"
        )
    if isinstance(event, AnswerEvent):
        forced = " (forced)" if event.forced else ""
        return (
            f'<div class="answer"><span class="tag">answer{esc(forced)}</span> '
            f"<b>{esc(event.answer if event.answer is not None else '(none)')}</b>"
            f"{text_block(event.text)}</div>"
        )
    if isinstance(event, ErrorEvent):
        return (
            f'<div class="error"><span class="tag">{esc(event.error_kind)}</span> '
            f"{esc(event.message)}</div>"
        )
    return ""


def _call(
    call: ModelCallEvent, before: list[Message], render: Renderer, scores: list[StepScore]
) -> str:
    out: list[str] = []
    if call.sent is not None:
        # Messages the call was sent that this context had not shown yet (a side call's own
        # prompt, or a scaffold that rebuilt its context): shown as the call's input.
        shared = 0
        for mine, sent in zip(before, call.sent.messages, strict=False):
            if mine != sent:
                break
            shared += 1
        fresh = call.sent.messages[shared:]
        if fresh:
            shown = "".join(render.message(m) for m in fresh)
            out.append(
                f'<details class="input" open><summary>input: {len(fresh)} new of '
                f"{len(call.sent.messages)} messages</summary>{shown}</details>"
            )
    usage = call.usage
    meta = (
        f"{esc(call.model)} · role {esc(call.role or '?')} · {call.latency_s:.2f} s · "
        f"{usage.prompt_tokens:,} in / {usage.completion_tokens:,} out tokens"
        + (" · cached" if call.cached else "")
        + (f" · {call.attempts} attempts" if call.attempts > 1 else "")
    )
    graded = "".join(
        f'<span class="score">{esc(s.name)}: {s.value:g}</span>' + (json_block(s.details) or "")
        if s.details
        else f'<span class="score">{esc(s.name)}: {s.value:g}</span>'
        for s in scores
    )
    if call.output is None:
        out.append(
            f'<div class="msg assistant failed"><div class="who">model call failed '
            f'<span class="muted">{meta}</span></div>'
            f'<div class="bad">{esc(call.error_kind or "")}: {esc(call.error or "")}</div>'
            f"{graded}</div>"
        )
        return "".join(out)
    thought = ""
    if call.output.reasoning:
        thought = (
            f'<details class="thought"><summary>reasoning</summary>'
            f"{text_block(call.output.reasoning)}</details>"
        )
    message = call.output.message
    calls = "".join(tool_call(c) for c in message.tool_calls)
    return "".join(out) + (
        f'<div class="msg assistant"><div class="who">assistant <span class="muted">{meta}'
        f"</span></div>{thought}{render.parts(message.content)}{calls}{graded}</div>"
    )


def _tool_result(event: ToolResultEvent, render: Renderer) -> str:
    result = event.result
    body = (
        f'<div class="bad">{esc(result.text)}</div>'
        if result.error is not None
        else render.parts(result.content, captions=True) or '<div class="muted">(no output)</div>'
    )
    return (
        f'<div class="msg tool"><div class="who">tool <span class="tool">{esc(event.name)}'
        f'</span> <span class="muted">{event.duration_s:.2f} s · {esc(event.call_id)}'
        f"{' · sent as user' if event.sent_as == 'user' else ''}</span></div>"
        f'<details class="args"><summary>arguments</summary>{json_block(event.arguments)}'
        f"</details>{body}</div>"
    )


def _edit(event: ContextEdit, messages: list[Message], render: Renderer) -> str:
    removed = messages[event.start : event.end]
    shown = "".join(
        f'<div class="placeholder purged">[purged {esc(p.type)}: {esc(p.name)}]</div>'
        for m in removed
        for p in m.content
        if not isinstance(p, Text)
    )
    replacement = "".join(render.message(m) for m in event.replacement)
    return (
        f'<div class="edit"><span class="tag">context edit</span> messages '
        f"[{event.start}:{event.end}] replaced by {len(event.replacement)}"
        f"{': ' + esc(event.reason) if event.reason else ''}"
        f"{shown}<details><summary>replacement</summary>{replacement}</details></div>"
    )
