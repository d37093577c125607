"""Helpers of the coder agent tests: a runner that writes a real trajectory, and a process scan."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.agents.task_info import TaskInfo
from omnilab.config import get_settings
from omnilab.inputs import InputSet
from omnilab.models.model import Model
from omnilab.models.types import Message
from omnilab.trajectory import Event, Trajectory, TrajectoryWriter, read_trajectory


@dataclass
class CoderRun:
    saved: Trajectory
    live: list[Event]
    workspace: Path
    trajectory: Path

    @property
    def artifacts(self) -> Path:
        return self.trajectory.with_name(f"{self.trajectory.stem}.coder")

    def added(self) -> list[Message]:
        """The messages the harness added (prompts, reminders, images), in order."""
        return [e.message for e in self.saved.events if e.kind == "message"]  # type: ignore[union-attr]

    def exit_reason(self) -> str:
        notes = [e for e in self.saved.events if e.kind == "note" and e.label == "exit"]  # type: ignore[union-attr]
        assert len(notes) == 1
        return notes[0].text  # type: ignore[union-attr]


def run_coder(
    tmp_path: Path,
    model: Model,
    files: Sequence[Path] = (),
    question: str = "What is shown?",
    *,
    budgets: Budgets | None = None,
    metadata: TaskInfo | None = None,
    name: str = "run",
    **options: Any,
) -> CoderRun:
    """Runs the coder agent on a task and reads its trajectory back."""
    workspace = tmp_path / f"{name}-ws"
    path = tmp_path / f"{name}.jsonl"
    live: list[Event] = []
    task = AgentTask(
        id=name,
        question=question,
        inputs=list(InputSet.from_paths(files)),
        metadata=metadata or TaskInfo(),
    )
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model,
            roles={},
            tools=None,
            budgets=budgets or Budgets(max_turns=12),
            workspace=workspace,
            trajectory=writer,
            on_event=live.append,
        )
        asyncio.run(get_agent("coder", **options).run(task, ctx))
    return CoderRun(read_trajectory(path), live, workspace, path)


def use_level(level: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs the sandbox at ``level`` (``auto``: the strongest here). The process level with a root
    harness cannot reach pytest's 0700 folders under its own uid: it gets the unsafe opt-in, as
    the sandbox's own tests do."""
    from omnilab.sandbox import IsolationLevel, SandboxError
    from omnilab.sandbox._isolation import resolve_level

    try:
        resolved = resolve_level(level if level != "auto" else None)
    except SandboxError as e:
        pytest.skip(str(e))
    monkeypatch.setenv("OMNILAB_SANDBOX__ISOLATION", resolved.value)
    if resolved is IsolationLevel.PROCESS and os.geteuid() == 0:
        monkeypatch.setenv("OMNILAB_SANDBOX__UNSAFE_PROCESS_AS_ROOT", "1")
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def sandbox_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every coder test runs the sandbox at ``CODER_TEST_ISOLATION`` (``auto`` by default: the
    strongest level here), so the whole suite can be run at the ``process`` level as well:
    ``CODER_TEST_ISOLATION=process pytest tests/agents/test_coder*.py``. A root harness at the
    process level gets the sandbox tests' unsafe opt-in (pytest's folders are 0700)."""
    use_level(os.environ.get("CODER_TEST_ISOLATION", "auto"), monkeypatch)


def processes_with(token: str) -> list[int]:
    """Live processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found
