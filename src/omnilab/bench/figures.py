"""A benchmark's own figures: the groupings and headline numbers its paper reports.

* OmniGAIA: Pass@1 by ``level`` and ``category``; Omni-DeepSearch: Pass@1 by
  ``retrieval_modality`` and ``audio_type``; OmniAgent, per question type (and the dataset
  suffix, ``question_subtype``, and the source benchmark, ``source``): accuracy for MCQ/NUM/FF, mean temporal IoU for TR and mean
  MRA for SIZE (its §4: "MCQ accuracy, Temporal IoU, MRA").
* Every figure carries a percentile-bootstrap interval (:func:`~.stats.bootstrap_ci`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from omnilab.bench.results import TaskResult
from omnilab.bench.stats import Interval, bootstrap_ci

__all__ = ["NATIVE_GROUPS", "Figure", "native_figures", "native_groups"]

NATIVE_GROUPS: dict[str, tuple[str, ...]] = {
    "omnigaia": ("level", "category"),
    "omni-deepsearch": ("retrieval_modality", "audio_type"),
    "omniagent": ("question_type", "question_subtype", "source"),
    "mcq": ("category", "task_type"),
}
"""The groupings each benchmark's paper reports, by dataset name."""
# OmniAgent's figure per base question type, and which types are scored continuously.
_TYPE_FIGURES = {
    "MCQ": "MCQ accuracy",
    "NUM": "NUM accuracy",
    "TR": "mean IoU (TR)",
    "SIZE": "mean MRA (SIZE)",
    "FF": "FF accuracy",
}
_CONTINUOUS = frozenset({"TR", "SIZE"})
_TYPE_ORDER = tuple(_TYPE_FIGURES)


def native_groups(dataset: str | None) -> tuple[str, ...]:
    """The groupings the paper of ``dataset`` reports (``level, category, task_type`` for others)."""
    return NATIVE_GROUPS.get(dataset or "", ("level", "category", "task_type"))


class Figure(BaseModel):
    """One headline figure of a benchmark, with its interval."""

    name: str
    """``Pass@1``, ``MCQ accuracy``, ``mean IoU (TR)``, ``mean MRA (SIZE)``, ..."""
    value: float | None
    """In [0, 1]; ``None`` when no task has a verdict."""
    n: int
    """Tasks it is computed over (undecided ones excluded)."""
    interval: Interval | None = None


def _figure(
    name: str, values: Sequence[float], *, confidence: float, resamples: int, seed: int
) -> Figure:
    if not values:
        return Figure(name=name, value=None, n=0)
    interval = bootstrap_ci(values, confidence=confidence, resamples=resamples, seed=seed)
    return Figure(name=name, value=interval.point, n=len(values), interval=interval)


def _base_type(result: TaskResult) -> str:
    raw = result.metadata.get("question_type") or result.metadata.task_type or "FF"
    return raw.split("_", 1)[0].upper()


def native_figures(
    results: Sequence[TaskResult],
    dataset: str | None,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> list[Figure]:
    """The figures the benchmark's paper reports, each with a bootstrap interval.

    OmniAgent: one per question type present (accuracy, or the mean IoU/MRA over the type's
    decided tasks, a failed run scoring 0); every other benchmark: Pass@1 (judged).
    """
    if dataset != "omniagent":
        verdicts = [v for v in (r.judged for r in results) if v is not None]
        return [
            _figure(
                "Pass@1",
                [float(v) for v in verdicts],
                confidence=confidence,
                resamples=resamples,
                seed=seed,
            )
        ]
    by_type: dict[str, list[TaskResult]] = {}
    for result in results:
        by_type.setdefault(_base_type(result), []).append(result)
    figures = []
    for kind in sorted(
        by_type, key=lambda k: (_TYPE_ORDER.index(k) if k in _TYPE_ORDER else len(_TYPE_ORDER), k)
    ):
        decided = [r for r in by_type[kind] if r.judged is not None]
        if kind in _CONTINUOUS:
            values = [r.score.value if r.score is not None else 0.0 for r in decided]
        else:
            values = [1.0 if r.judged else 0.0 for r in decided]
        name = _TYPE_FIGURES.get(kind, f"{kind} accuracy")
        figures.append(_figure(name, values, confidence=confidence, resamples=resamples, seed=seed))
    return figures
