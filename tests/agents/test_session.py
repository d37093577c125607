"""AgentRun on its own: the crash guard, model failures, budgets per tool and per turn,
terminal tools, the repeat notice, branches, step scores, context edits and inline media."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from agentkit import scripted

from omnilab.agents import AgentConfigError, AgentContext, AgentTask, Budgets
from omnilab.agents.session import AgentRun
from omnilab.agents.templates import render
from omnilab.content import Image
from omnilab.models import Message
from omnilab.models.model import Model
from omnilab.models.providers import scripted as s
from omnilab.models.types import ToolCall
from omnilab.tools import ToolResult, tool
from omnilab.trajectory import (
    ContextEdit,
    ErrorEvent,
    RunStatus,
    StepNote,
    StepScore,
    Trajectory,
    TrajectoryWriter,
    read_trajectory,
    render_text,
)

Body = Callable[[AgentRun], Awaitable[RunStatus]]


def run_session(
    tmp_path: Path, model: Model, body: Body, **session: Any
) -> tuple[Trajectory, Trajectory]:
    """Run ``body`` in a session; the trajectory returned and the one read back from disk."""
    path = tmp_path / "run.jsonl"
    task = AgentTask(id="t", question="q?")
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model,
            roles={},
            tools=None,
            budgets=Budgets(max_turns=5),
            workspace=tmp_path / "ws",
            trajectory=writer,
        )
        run = AgentRun(task, ctx, agent="test", **session)
        returned = asyncio.run(run.execute(lambda: body(run)))
    return returned, read_trajectory(path)


@tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: What to say.
    """
    return text


@tool
def stop(reason: str) -> ToolResult:
    """End the task.

    Args:
        reason: Why.
    """
    return ToolResult(content=[], metadata={"terminal": True, "reason": reason})


def calls_of(*pairs: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall(name=n, arguments=a) for n, a in pairs]


def test_a_finished_run_is_freed_without_the_garbage_collector(tmp_path: Path) -> None:
    # The run's model views hold it weakly: a run and all it reached (events, messages, its
    # writer) go with the last reference to it, instead of waiting, at about 85 objects per
    # task, for a collection to find the cycle.
    model, _ = scripted([s.text("4"), s.text("after")])
    runs: list[weakref.ref[AgentRun]] = []

    async def body(run: AgentRun) -> RunStatus:
        runs.append(weakref.ref(run))
        chat = run.context()
        run.add(chat, Message.user("2+2?"))
        await run.call("agent", chat)
        return "answered"

    gc.collect()
    gc.disable()
    try:
        returned, saved = run_session(tmp_path, model, body)
        assert runs[0]() is None  # freed by reference counting alone
    finally:
        gc.enable()
    assert [e.kind for e in saved.events] == ["run_start", "message", "model_call", "run_end"]
    assert returned.events[2].kind == "model_call"


def test_the_crash_guard_records_the_traceback_and_ends_the_run(tmp_path: Path) -> None:
    model, _ = scripted([s.text("thinking")])

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context()
        run.add(chat, Message.user("hi"))
        await run.call("agent", chat)
        raise RuntimeError("scaffold bug")

    path = tmp_path / "run.jsonl"
    with TrajectoryWriter(path) as writer, pytest.raises(RuntimeError, match="scaffold bug"):
        ctx = AgentContext(model, {}, None, Budgets(), tmp_path, writer)
        run = AgentRun(AgentTask(id="t", question="q"), ctx, agent="test")
        asyncio.run(run.execute(lambda: body(run)))
    saved = read_trajectory(path)
    assert [e.kind for e in saved.events] == [
        "run_start",
        "message",
        "model_call",
        "error",
        "run_end",
    ]
    error = saved.events[3]
    assert isinstance(error, ErrorEvent) and error.error_kind == "internal"
    assert (
        "scaffold bug" in error.details["traceback"] and "Traceback" in error.details["traceback"]
    )
    assert saved.status == "error"


def test_a_failing_model_ends_the_run_with_status_error(tmp_path: Path) -> None:
    model, _ = scripted([s.error(500, times=3)])

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context(messages=[Message.user("hi")])
        await run.call("agent", chat)
        return "answered"

    returned, saved = run_session(tmp_path, model, body)
    assert saved.status == returned.status == "error"
    assert saved.model_calls[0].error is not None and saved.model_calls[0].role == "agent"


def test_budgets_per_tool_and_per_turn(tmp_path: Path) -> None:
    model, _ = scripted([])

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context()
        first = await run.run_tools(
            calls_of(("echo", {"text": "1"}), ("echo", {"text": "2"}), ("echo", {"text": "3"})),
            chat,
            [echo],
        )
        assert [o.result.ok for o in first.outcomes] == [True, True, False]
        second = await run.run_tools(calls_of(("echo", {"text": "4"})), chat, [echo])
        assert second.outcomes[0].result.error is not None
        assert run.gate.uses == {"echo": 2}
        return "no_answer"

    _, saved = run_session(tmp_path, model, body, tool_budgets={"echo": 2}, calls_per_turn=2)
    codes = [r.result.error.code if r.result.error else "ok" for r in saved.tool_results]
    assert codes == ["ok", "ok", "TOO_MANY_CALLS", "TOOL_BUDGET"]
    assert "at most 2 times" in saved.tool_results[3].result.text


def test_terminal_tools_by_name_or_by_result(tmp_path: Path) -> None:
    model, _ = scripted([])

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context()
        plain = await run.run_tools(calls_of(("nope", {}), ("echo", {})), chat, [echo, stop])
        assert plain.terminal is None  # failed calls (unknown tool, bad arguments) end nothing
        named = await run.run_tools(calls_of(("echo", {"text": "y"})), chat, {"echo": echo})
        assert named.terminal is not None and named.terminal.call.arguments == {"text": "y"}
        by_result = await run.run_tools(
            calls_of(("nope", {}), ("stop", {"reason": "done"})), chat, [echo, stop]
        )
        assert by_result.terminal is not None and by_result.terminal.call.name == "stop"
        return "answered"

    run_session(tmp_path, model, body, terminal_tools={"echo"})


def test_an_exact_third_repeat_gets_a_notice(tmp_path: Path) -> None:
    model, _ = scripted([])
    notice = render("notice_repeat", tool="echo", count=3)

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context()
        for text in ("a", "a", "b", "a", "a"):
            await run.run_tools(calls_of(("echo", {"text": text})), chat, [echo])
        for _ in range(3):
            await run.run_tools(calls_of(("missing", {"q": 1})), chat, [echo])
        return "no_answer"

    _, saved = run_session(tmp_path, model, body)
    texts = [r.result.text for r in saved.tool_results]
    assert texts[:3] == ["a", "a", "b"]
    assert texts[3] == f"a\n{notice}" and "call number 4 of echo" in texts[4]
    assert notice not in texts[5] and "call number" not in texts[6]
    assert "call number 3 of missing" in texts[7] and texts[7].startswith("Error [UNKNOWN_TOOL]")
    # The model read the notice: it is in the tool message of its context.
    assert saved.messages()[3].text == f"a\n{notice}"


def test_branches_scores_and_edits_are_recorded(tmp_path: Path) -> None:
    model, _ = scripted([s.text("one"), s.text("two")])

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context(messages=[Message.user("a"), Message.user("b")])
        await run.call("agent", chat)
        assert chat.last_call_id is not None
        run.score(chat.last_call_id, -1.0, name="process", rubric="wrong tool")
        run.edit(chat, 0, 1, reason="purge")
        run.note("turn", "saw a red square, confidence 0.4", confidence=0.4)
        await run.call("agent", chat)
        return run.answer("<answer>two</answer>")

    _, saved = run_session(tmp_path, model, body, branch_of=("parent-run", "event-7"))
    start = saved.run_start
    assert start is not None
    assert (start.parent_run_id, start.parent_event_id) == ("parent-run", "event-7")
    score = next(e for e in saved.events if isinstance(e, StepScore))
    assert score.target_id == saved.model_calls[0].id and score.value == -1.0
    assert score.details == {"rubric": "wrong tool"}
    edit = next(e for e in saved.events if isinstance(e, ContextEdit))
    assert (edit.start, edit.end, edit.replacement, edit.reason) == (0, 1, [], "purge")
    first, second = saved.contexts()
    assert [m.text for m in first.messages] == ["a", "b"]
    assert [m.text for m in second.messages] == ["b", "one"]
    assert [m.text for m in saved.messages()] == ["b", "one", "two"]
    note = next(e for e in saved.events if isinstance(e, StepNote))
    assert (note.label, note.data) == ("turn", {"confidence": 0.4})
    shown = render_text(saved)
    assert "score process=-1" in shown and "messages 0-0 purged (purge)" in shown
    assert "turn: saw a red square, confidence 0.4" in shown


def test_inline_media_go_to_files_beside_the_trajectory(tmp_path: Path, image_file: Path) -> None:
    model, adapter = scripted([s.text("a square")])
    data = image_file.read_bytes()

    async def body(run: AgentRun) -> RunStatus:
        part = Image(data=data, mime_type="image/png")
        chat = run.context(messages=[Message.user("what is it?", part)])
        await run.call("agent", chat)
        return run.answer("<answer>square</answer>")

    _, saved = run_session(tmp_path, model, body)
    text = (tmp_path / "run.jsonl").read_text()
    assert '"data":"' not in text
    (ctx,) = saved.contexts()
    image = ctx.messages[0].content[1]
    assert isinstance(image, Image) and image.data is None and image.path is not None
    assert image.path.parent == tmp_path / "run.media" and image.path.read_bytes() == data
    assert ctx.call.sent is not None and ctx.call.sent.media[str(image.path)].startswith("sha256:")
    assert adapter.requests[0][0][0].content[1] == Image(data=data, mime_type="image/png")


def test_the_time_budget_during_a_call(tmp_path: Path) -> None:
    model, _ = scripted([s.timeout(seconds=5)])

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context(messages=[Message.user("hi")])
        output = await run.call("agent", chat)
        return "budget" if output is None else "answered"

    path = tmp_path / "run.jsonl"
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(model, {}, None, Budgets(max_seconds=0.2), tmp_path, writer)
        run = AgentRun(AgentTask(id="t", question="q"), ctx, agent="test")
        asyncio.run(run.execute(lambda: body(run)))
    saved = read_trajectory(path)
    assert saved.status == "budget"
    assert any(isinstance(e, ErrorEvent) and e.error_kind == "budget" for e in saved.events)


def test_roles_must_exist(tmp_path: Path) -> None:
    model, _ = scripted([])

    async def body(run: AgentRun) -> RunStatus:
        run.context("judge")
        return "answered"

    with pytest.raises(AgentConfigError, match="no model for role 'judge'"):
        run_session(tmp_path, model, body)
