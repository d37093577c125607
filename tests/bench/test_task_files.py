"""A task's files off the event loop: the result line waits for its trajectory, workspaces are
made only by what uses them, and derived media still reach a workspace made on demand."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from test_bench_runner import ANSWERS, StandInAgent, make_dataset, run

from omnilab.bench import TaskResult, task_files
from omnilab.bench.result_log import ResultLog
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import TRAJECTORY_LINGER_S
from omnilab.trajectory import RunEnd, RunStart, TrajectoryWriter, read_trajectory


def test_a_result_line_is_written_only_once_its_trajectory_is_complete(tmp_path: Path) -> None:
    trajectory = tmp_path / "trajectories" / "t1.jsonl"
    results = tmp_path / "results.jsonl"
    writer = TrajectoryWriter(trajectory, linger_s=60)
    writer.emit(RunStart(run_id=writer.run_id, question="q", agent="tir"))
    writer.emit(RunEnd(status="answered", wall_s=0.0, turns=1))
    gate = threading.Event()
    close = writer.close

    def slow_close(*, sync: bool = True) -> None:
        gate.wait(10)  # a file system that takes its time
        close(sync=sync)

    writer.close = slow_close  # type: ignore[method-assign]

    async def main() -> None:
        async with ResultLog(results) as log:
            task_files.finish_later(writer, tmp_path / "workspace", False)
            assert task_files.finishing(trajectory) is not None
            log.append(TaskResult(task_id="t1"), sync_first=trajectory)
            await asyncio.sleep(0.1)
            # Neither is there yet: a process killed now leaves no result without trajectory.
            assert results.read_text() == "" and not trajectory.exists()
            gate.set()
        # Closing the log waited for the line.

    asyncio.run(main())
    assert [r.task_id for r in RunDir(tmp_path).results()] == ["t1"]
    assert read_trajectory(trajectory).status == "answered"
    assert task_files.finishing(trajectory) is None


def test_lines_keep_the_order_of_the_appends(tmp_path: Path) -> None:
    # The second task's files are finished first; its line still comes after the first's.
    gate = threading.Event()
    trajectories = [tmp_path / "trajectories" / f"t{i}.jsonl" for i in (1, 2)]
    writers = [TrajectoryWriter(path, linger_s=60) for path in trajectories]
    close = writers[0].close

    def slow_close(*, sync: bool = True) -> None:
        gate.wait(10)
        close(sync=sync)

    writers[0].close = slow_close  # type: ignore[method-assign]

    async def main() -> None:
        async with ResultLog(tmp_path / "results.jsonl") as log:
            for i, (writer, path) in enumerate(zip(writers, trajectories, strict=True), 1):
                task_files.finish_later(writer, tmp_path / "workspace", False)
                if i == 2:
                    while task_files.finishing(path) is not None:
                        await asyncio.sleep(0.01)
                log.append(TaskResult(task_id=f"t{i}"), sync_first=path)
            await asyncio.sleep(0.1)
            assert RunDir(tmp_path).results() == []  # t2 is ready, but waits behind t1
            gate.set()

    asyncio.run(main())
    assert [r.task_id for r in RunDir(tmp_path).results()] == ["t1", "t2"]


def test_a_trajectory_that_cannot_be_written_marks_its_result(tmp_path: Path) -> None:
    blocker = tmp_path / "trajectories"
    blocker.write_text("a file where the folder should be")
    trajectory = blocker / "t1.jsonl"
    writer = TrajectoryWriter(trajectory, linger_s=60)
    writer.emit(RunEnd(status="answered", wall_s=0.0, turns=1))

    async def main() -> None:
        async with ResultLog(tmp_path / "results.jsonl") as log:
            task_files.finish_later(writer, tmp_path / "workspace", False)
            log.append(TaskResult(task_id="t1"), sync_first=trajectory)

    asyncio.run(main())
    (result,) = RunDir(tmp_path).results()
    assert result.error is not None and result.error.startswith("trajectory not written")


class WorkspaceProbe(StandInAgent):
    """Notes whether each task's workspace existed when the agent started."""

    def __init__(self, keep: str | None = None) -> None:
        super().__init__()
        self.seen: dict[str, bool] = {}
        self.keep = keep

    async def _run(self, task: Any, ctx: Any) -> Any:
        self.seen[task.id] = ctx.workspace.exists()
        if task.id == self.keep:
            ctx.workspace.mkdir(parents=True, exist_ok=True)
            (ctx.workspace / "notes.txt").write_text("worth keeping")
        return await super()._run(task, ctx)


def test_the_runner_makes_no_workspace_a_task_does_not_use(tmp_path: Path) -> None:
    data = make_dataset(tmp_path)
    agent = WorkspaceProbe(keep="t2")
    out = tmp_path / "run"
    run(data, out, agent=agent, concurrency=3)
    assert agent.seen == dict.fromkeys(ANSWERS, False)
    folder = RunDir(out)
    assert [p.name for p in (out / "workspaces").iterdir()] == ["t2"]
    assert (folder.workspace("t2") / "notes.txt").read_text() == "worth keeping"
    for task in ANSWERS:  # every trajectory complete once the run returned
        assert read_trajectory(folder.trajectory_file(task)).status == "answered"
    assert TRAJECTORY_LINGER_S > 0


def test_derived_media_make_the_workspace_they_are_copied_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.tools._store import MediaStore

    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(tmp_path / "cache"))
    from omnilab.config import get_settings

    get_settings.cache_clear()
    source = tmp_path / "in.txt"
    source.write_text("source")
    workspace = tmp_path / "run" / "workspaces" / "t1"
    store = MediaStore(workspace)
    path = store.save(source, "copy", {}, "out.txt", lambda dest: dest.write_text("derived"))
    assert path.read_text() == "derived"
    assert (workspace / "perception" / "out.txt").read_text() == "derived"
    get_settings.cache_clear()
