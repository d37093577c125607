"""The per-task result record, and reading/writing runs as JSON Lines (one record per task).

The runner appends one :class:`TaskResult` per finished task, so a crash loses at most the line
being written; :func:`read_results` skips such a cut-off last line.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, computed_field

from omnilab import _wsread
from omnilab._ownfolders import open_new
from omnilab.bench.errors import BenchError
from omnilab.bench.scoring.base import Score
from omnilab.bench.task import Task, TaskMetadata
from omnilab.models import Usage

__all__ = [
    "RESULT_SCHEMA_VERSION",
    "TaskResult",
    "append_result",
    "read_results",
    "unequal_failures",
    "write_results",
]

RESULT_SCHEMA_VERSION = 1


class TaskResult(BaseModel):
    """What happened on one task: the answer, its score, and what it cost."""

    schema_version: int = RESULT_SCHEMA_VERSION
    task_id: str
    sample: int = Field(default=0, ge=0)
    """Which rollout of the task this is (``--samples K`` runs samples 0 .. K-1)."""
    dataset: str | None = None
    labels: list[str] = Field(default_factory=list)
    """The task's acceptable answers (the label first, then its aliases), as scored against."""
    prediction: str = ""
    """The agent's final output text, as scored."""
    extracted: str | None = None
    """The answer read from the output (the ``<answer>`` span), when there was one."""
    score: Score | None = None
    """``None`` when the task was not scored (the run failed, see ``error``)."""
    tool_calls: dict[str, int] = Field(default_factory=dict)
    """Tool calls by tool name."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens of every model call of the task (the judge's excluded)."""
    cost_usd: float | None = None
    """Money spent, when the provider's prices are known."""
    wall_s: float = 0.0
    """Seconds from start to answer."""
    error: str | None = None
    """Why the run failed (timeout, model error, ...); a failed run counts as a wrong answer."""
    error_kind: str | None = None
    """What kind of failure ``error`` is: ``missing_media``, ``timeout``, ``crash``, ``scoring``,
    or the model error kind (``connection``, ``server``, ...) when a model call failed."""
    model_calls: int = 0
    """Model calls the agent made (answered, cached or failed); 0 means it never reached one."""
    stats: dict[str, float] = Field(default_factory=dict)
    """Per-run figures the agent reported in its ``run_end`` (e.g. ``rounds`` of ``master``)."""
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)
    """A copy of the task's metadata, so results group without the dataset file."""
    modalities: str = "none"
    """The task's input-modality combination (``audio+image``, ``video``)."""

    @classmethod
    def for_task(cls, task: Task, **fields: object) -> TaskResult:
        """A result for ``task`` with its id, dataset, metadata and modalities filled in."""
        base = {
            "task_id": task.id,
            "dataset": task.dataset,
            "labels": list(task.answers.all),
            "metadata": task.metadata,
            "modalities": task.modalities,
        }
        return cls.model_validate({**base, **fields})

    @computed_field  # type: ignore[prop-decorator]
    @property
    def em(self) -> bool | None:
        """Exact match; a failed run is ``False``, a scorer without EM gives ``None``."""
        if self.score is None:
            return False if self.error is not None else None
        return self.score.exact_match

    @computed_field  # type: ignore[prop-decorator]
    @property
    def judged(self) -> bool | None:
        """The Pass@1 verdict; ``None`` for a judge error or an unscored, unfailed task."""
        if self.score is None:
            return False if self.error is not None else None
        return self.score.correct

    @property
    def key(self) -> tuple[str, int]:
        """``(task_id, sample)``: what a run folder holds one result for."""
        return (self.task_id, self.sample)

    @property
    def tool_call_count(self) -> int:
        """Tool calls of all kinds."""
        return sum(self.tool_calls.values())

    @property
    def answer_text(self) -> str:
        """The answer as OmniGAIA counts it for the non-empty rate: the ``<answer>`` span, else
        the whole output."""
        if self.extracted is not None:
            return self.extracted.strip()
        if self.score is not None and self.score.extracted is not None:
            return self.score.extracted.strip()
        return self.prediction.strip()


def append_result(path: str | Path, result: TaskResult) -> None:
    """Append one record to a JSON Lines file (created with its folders if needed)."""
    path = Path(path)
    with open_new(path, append=True) as f:  # folders made 0700, no link followed
        f.write(result.model_dump_json() + "\n")


def write_results(path: str | Path, results: Iterable[TaskResult]) -> None:
    """Write records to a JSON Lines file, replacing it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for result in results:
            f.write(result.model_dump_json() + "\n")


def read_results(path: str | Path) -> list[TaskResult]:
    """The records of a results file. A cut-off last line (a crash mid-write) is skipped; any
    other bad line is a :class:`BenchError`."""
    path = Path(path)
    try:
        # No FIFO; no link under a run folder marked untrusted (omnilab report of another's).
        raw = _wsread.read_bytes(path, max_bytes=64 * 1024**3)
        lines = raw.decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        raise BenchError(f"cannot read results {path}: {why or e}") from None
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    results: list[TaskResult] = []
    for position, (number, line) in enumerate(numbered):
        try:
            results.append(TaskResult.model_validate_json(line))
        except ValidationError as e:
            last = position == len(numbered) - 1
            if last and not line.rstrip().endswith("}"):
                break
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            raise BenchError(
                f"{path} line {number} is not a task result ({where}: {first['msg']})"
            ) from None
    return results


def unequal_failures(
    a: Iterable[TaskResult], b: Iterable[TaskResult], *, labels: tuple[str, str] = ("A", "B")
) -> str | None:
    """What makes a comparison of two runs unfair: tasks (and samples) both runs hold that
    failed (timeout, crash, missing media) in one run but not in the other, as one line;
    ``None`` when there are none. A failed run counts as wrong, so such a comparison would
    measure the failures rather than the answers."""
    by_a = {r.key: r for r in a}
    by_b = {r.key: r for r in b}
    shared = by_a.keys() & by_b.keys()
    only_a = sorted(k for k in shared if by_a[k].error and not by_b[k].error)
    only_b = sorted(k for k in shared if by_b[k].error and not by_a[k].error)

    def listed(keys: list[tuple[str, int]]) -> str:
        names = [t if s == 0 else f"{t}#{s}" for t, s in keys[:3]]
        return ", ".join(names) + (" ..." if len(keys) > 3 else "")

    parts = [
        f"{len(keys)} failed in {label} only ({listed(keys)})"
        for keys, label in ((only_a, labels[0]), (only_b, labels[1]))
        if keys
    ]
    return "unequal failures: " + "; ".join(parts) if parts else None
