"""The general hooks the master agent added: a context's id prefix, per-run stats in run_end,
results and metrics."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentkit import scripted

from omnilab.agents import AgentContext, AgentTask, Budgets
from omnilab.agents.session import AgentRun
from omnilab.bench.metrics import run_stats, summarize
from omnilab.bench.results import TaskResult
from omnilab.models.providers.scripted import text
from omnilab.models.types import Message
from omnilab.trajectory import TrajectoryWriter, read_trajectory


def test_contexts_take_a_name_and_stats_reach_run_end(tmp_path: Path) -> None:
    model, _ = scripted([text("hello")])
    path = tmp_path / "t.jsonl"
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(model, {}, None, Budgets(), tmp_path, writer)
        run = AgentRun(AgentTask(id="t", question="q"), ctx, agent="x")

        async def body() -> str:
            chat = run.context("agent", name="agent-r2")
            run.add(chat, Message.user("hi"))
            await run.call("agent", chat)
            run.stats["rounds"] = 2
            return run.answer("hello")

        asyncio.run(run.execute(body))  # type: ignore[arg-type]
    saved = read_trajectory(path)
    assert saved.model_calls[0].context_id == "agent-r2-1"
    assert saved.run_end is not None and saved.run_end.stats == {"rounds": 2.0}


def test_run_stats_average_over_the_runs_that_report_them() -> None:
    results = [
        TaskResult(task_id="a", stats={"rounds": 1, "stopped_early": 1}),
        TaskResult(task_id="b", stats={"rounds": 3, "stopped_early": 0}),
        TaskResult(task_id="c", stats={"rounds": 1, "stopped_early": 1}),
        TaskResult(task_id="d", error="crash"),  # reported nothing
    ]
    stats = run_stats(results)
    assert stats["rounds"].mean == 5 / 3 and stats["rounds"].tasks == 3
    assert stats["rounds"].distribution == {"1": 2, "3": 1}
    assert stats["stopped_early"].mean == 2 / 3
    assert summarize(results, resamples=10).run_stats == stats
    assert summarize(results[3:], resamples=10).run_stats == {}
