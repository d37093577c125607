"""Reading run folders for training export: one :class:`RunRecord` per finished rollout.

Every exporter (SFT, RL prompts, groups and advantages, DPO pairs) starts from the same records:
the run's config, the task as the dataset file describes it (question, answers, metadata, files),
the :class:`~omnilab.bench.results.TaskResult` with its score, and the trajectory with the exact
input of every model call. :func:`iter_records` reads them from one or more run folders and applies
the user's filters, so no exporter re-derives state from the files on its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from omnilab import _wsread
from omnilab._trust import foreign_writer
from omnilab.bench.errors import BenchError
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunConfig, RunDir
from omnilab.bench.task import Task
from omnilab.trajectory import Trajectory, TrajectoryError, read_trajectory

__all__ = ["RecordFilter", "RunRecord", "iter_records", "load_run", "task_groups"]


@dataclass(frozen=True)
class RecordFilter:
    """Which rollouts an export keeps. The defaults keep every rollout that has a trajectory."""

    correct_only: bool = False
    """Keep only rollouts whose Pass@1 verdict is correct."""
    min_score: float | None = None
    """Keep only rollouts whose score value is at least this (IoU, MRA, reward ...)."""
    max_turns: int | None = None
    """Drop rollouts whose agent made more model calls than this."""
    agents: frozenset[str] = frozenset()
    """Keep only runs of these agents (empty: all)."""
    tasks: frozenset[str] = frozenset()
    """Keep only these task ids (empty: all)."""
    include_failed: bool = False
    """Keep rollouts whose run failed (timeout, crash, model error); off by default."""

    def keeps(self, record: RunRecord) -> bool:
        """Whether ``record`` passes every filter."""
        return self.rejects(record) is None

    def rejects(self, record: RunRecord) -> str | None:
        """The first filter ``record`` fails, as its option name (``--correct-only``), or
        ``None`` when it passes every one: so a user whose export came out empty is told which
        filter dropped how many rollouts."""
        result = record.result
        if self.agents and record.config.agent not in self.agents:
            return "--agent"
        if self.tasks and result.task_id not in self.tasks:
            return "--task"
        if result.error is not None and not self.include_failed:
            return "failed run"
        if self.correct_only and result.judged is not True:
            return "--correct-only"
        if self.min_score is not None and (
            result.score is None or result.score.value < self.min_score
        ):
            return "--min-score"
        if self.max_turns is not None and result.model_calls > self.max_turns:
            return "--max-turns"
        return None


@dataclass
class RunRecord:
    """One rollout of one task in one run folder."""

    run: RunDir
    config: RunConfig
    result: TaskResult
    task: Task | None
    """The task from the run's dataset file; ``None`` when the file no longer lists it."""
    _trajectory: Trajectory | None = field(default=None, repr=False)

    @property
    def task_id(self) -> str:
        return self.result.task_id

    @property
    def sample(self) -> int:
        return self.result.sample

    @property
    def trajectory_path(self) -> Path:
        return self.run.trajectory_file(self.result.task_id, self.result.sample)

    @cached_property
    def trajectory(self) -> Trajectory:
        """The rollout's trajectory, read on first use; :class:`BenchError` if it is missing or
        unreadable (a one-line message naming the file)."""
        if self._trajectory is not None:
            return self._trajectory
        path = self.trajectory_path
        if not path.is_file():
            raise BenchError(f"{path} is missing: the run has no trajectory for {self.task_id}")
        try:
            return read_trajectory(path)
        except TrajectoryError as e:
            raise BenchError(f"cannot read {path}: {e}") from None

    @property
    def reward(self) -> float:
        """The rollout's scalar reward: the score value, 0 for a failed or unscored run."""
        score = self.result.score
        return float(score.value) if score is not None else 0.0


def load_run(folder: str | Path) -> tuple[RunDir, RunConfig, dict[str, Task]]:
    """A run folder, its config and its tasks by id (read from the run's dataset file).

    Tasks are empty when the dataset file has moved, or when another user can change the run's
    run.json (it names the dataset file, which would be read with this user's rights): exports
    that need labels say so then.
    """
    from omnilab.bench.datasets import load_dataset

    # It may be another user's run: its files are read through no link, never from a FIFO.
    _wsread.mark_untrusted(Path(folder))
    run = RunDir(folder)
    config = run.read_config()
    tasks: dict[str, Task] = {}
    if foreign_writer(Path(folder) / "run.json") is None and config.data.exists():
        loaded = load_dataset(
            config.dataset,
            config.data,
            media_root=config.media_root,
            allow_outside_media_root=config.allow_outside_media_root,
        )
        tasks = {t.id: t for t in loaded.tasks}
    return run, config, tasks


def iter_records(
    folders: Sequence[str | Path],
    keep: RecordFilter | None = None,
    dropped: dict[str, int] | None = None,
) -> Iterator[RunRecord]:
    """Every kept rollout of ``folders``, run by run, in the order of each ``results.jsonl``;
    ``dropped`` (when given) counts the rollouts each filter dropped, by :meth:`RecordFilter.rejects`."""
    keep = keep or RecordFilter()
    for folder in folders:
        run, config, tasks = load_run(folder)
        for result in run.results():
            record = RunRecord(
                run=run, config=config, result=result, task=tasks.get(result.task_id)
            )
            reason = keep.rejects(record)
            if reason is None:
                yield record
            elif dropped is not None:
                dropped[reason] = dropped.get(reason, 0) + 1


def task_groups(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    """Records grouped by task id (the samples of ``--samples G``, across runs), in order."""
    groups: dict[str, list[RunRecord]] = {}
    for record in records:
        groups.setdefault(record.task_id, []).append(record)
    for members in groups.values():
        members.sort(key=lambda r: r.sample)
    return groups
