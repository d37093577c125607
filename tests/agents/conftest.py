"""Agent fixtures: quick retries and a run helper that writes a real trajectory."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from agentkit import Run, RunAgent

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.config import get_settings
from omnilab.inputs import InputSet
from omnilab.models.model import Model
from omnilab.trajectory import Event, TrajectoryWriter, read_trajectory


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries wait milliseconds; the web stays on the offline sample corpus."""
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_S", "0.01")
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_MAX_S", "0.05")
    get_settings.cache_clear()


@pytest.fixture()
def run_agent(tmp_path: Path) -> RunAgent:
    """``run_agent(model, files, question, tools=..., budgets=..., roles=..., **options)``."""
    counter = iter(range(1000))

    def run(
        model: Model,
        files: Sequence[Path] = (),
        question: str = "What is shown?",
        *,
        tools: list[str] | None = None,
        budgets: Budgets | None = None,
        roles: dict[str, Model] | None = None,
        **options: Any,
    ) -> Run:
        n = next(counter)
        workspace = tmp_path / f"ws{n}"
        path = tmp_path / f"run{n}.jsonl"
        live: list[Event] = []
        task = AgentTask(id=f"t{n}", question=question, inputs=list(InputSet.from_paths(files)))
        with TrajectoryWriter(path) as writer:
            ctx = AgentContext(
                model=model,
                roles=roles or {},
                tools=tools,
                budgets=budgets or Budgets(),
                workspace=workspace,
                trajectory=writer,
                on_event=live.append,
            )
            returned = asyncio.run(get_agent("tir", **options).run(task, ctx))
        return Run(returned, read_trajectory(path), live, workspace)

    return run
