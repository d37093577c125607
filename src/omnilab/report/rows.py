"""Per-task facts the index and the comparison share: one :class:`TaskRow` per result, read
from the result and (when saved) its trajectory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import sample_stem
from omnilab.trajectory import StepNote, Trajectory

__all__ = ["TaskRow", "state_of"]


def state_of(result: TaskResult) -> str:
    """``correct``, ``wrong``, ``error`` (the run failed) or ``undecided`` (no verdict)."""
    if result.error is not None:
        return "error"
    if result.judged is None:
        return "undecided"
    return "correct" if result.judged else "wrong"


def _numbers(data: dict[str, Any], prefix: str) -> list[tuple[str, float]]:
    """The numbers of a note's data by dotted key, one level of nesting deep (a deep-search
    note's ``left: {web_search: 3}`` gives ``search.left.web_search``)."""
    found: list[tuple[str, float]] = []
    for key, value in data.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            found.append((f"{prefix}.{key}", float(value)))
        elif isinstance(value, dict):
            found += [
                (f"{prefix}.{key}.{k}", float(v))
                for k, v in value.items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            ]
    return found


@dataclass
class TaskRow:
    """One task (and sample) of a run, as the report shows it."""

    result: TaskResult
    question: str = ""
    turns: int | None = None
    model_calls: int = 0
    latencies: list[float] = field(default_factory=list)
    """Seconds of each model call."""
    page: str | None = None
    """The task's page, relative to the run's report folder."""
    notes: dict[str, int] = field(default_factory=dict)
    """Step notes by label (a scaffold's turns, rounds, decisions)."""
    values: dict[str, list[float]] = field(default_factory=dict)
    """Numbers the notes carried, by ``label.key`` (a turn's confidence, a budget used)."""
    span: tuple[float, float] | None = None
    """When the task's run started and ended (epoch seconds), from its trajectory."""

    @classmethod
    def of(cls, result: TaskResult, trajectory: Trajectory | None) -> TaskRow:
        """The row of ``result``, with what its trajectory adds."""
        row = cls(result=result, model_calls=result.model_calls)
        if trajectory is not None:
            start, end = trajectory.run_start, trajectory.run_end
            row.question = start.question if start is not None else ""
            row.turns = end.turns if end is not None else None
            if start is not None and end is not None:
                row.span = (start.timestamp, end.timestamp)
            calls = trajectory.model_calls
            row.model_calls = len(calls)
            row.latencies = [c.latency_s for c in calls]
            for event in trajectory.events:
                if isinstance(event, StepNote):
                    row.notes[event.label] = row.notes.get(event.label, 0) + 1
                    for key, value in _numbers(event.data, event.label):
                        row.values.setdefault(key, []).append(value)
        return row

    @property
    def stem(self) -> str:
        """The file stem of the task's page."""
        return sample_stem(self.result.task_id, self.result.sample)

    @property
    def state(self) -> str:
        """See :func:`state_of`."""
        return state_of(self.result)

    @property
    def label(self) -> str:
        """``id`` or ``id#k`` for sample k > 0."""
        r = self.result
        return r.task_id if r.sample == 0 else f"{r.task_id}#{r.sample}"

    @property
    def answer(self) -> str:
        """The extracted answer, else the output."""
        return self.result.answer_text

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        usage = self.result.usage
        return usage.prompt_tokens + usage.completion_tokens
