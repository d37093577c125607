"""Metrics over several samples per task (``omnilab eval --samples K``).

With K rollouts per task, Pass@1 over all results is the mean over samples; this module adds
the spread of the per-sample accuracies and pass@k, the chance that at least one of k samples
is correct, by the unbiased estimator of Chen et al. (2021), "Evaluating Large Language Models
Trained on Code", eq. 1: ``1 - C(n - c, k) / C(n, k)`` for a task with ``n`` decided samples of
which ``c`` are correct, averaged over the tasks with ``n >= k``. Undecided samples (a judge
error) are left out of ``n``; failed runs count as wrong, as in Pass@1.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from math import comb

from pydantic import BaseModel

from omnilab.bench.results import TaskResult

__all__ = ["SampleStats", "pass_at_k", "sample_ks", "sample_lines", "sample_stats"]


class SampleStats(BaseModel):
    """Accuracy over samples: per-sample Pass@1, their mean and spread, and pass@k."""

    samples: int
    """Most samples any task has."""
    tasks: int
    per_sample: dict[int, float | None]
    """Pass@1 of each sample index over the tasks that have it (``None``: none decided)."""
    mean: float | None
    """Mean of ``per_sample`` (the headline figure with samples)."""
    stdev: float | None
    """Standard deviation of ``per_sample`` (``None`` with fewer than two samples)."""
    pass_at_k: dict[int, float | None]
    """pass@k for k = 1, 2, 4, ... up to ``samples`` (and ``samples`` itself)."""


def _verdicts(results: Iterable[TaskResult]) -> dict[str, list[bool]]:
    by_task: dict[str, list[bool]] = {}
    for result in results:
        verdict = result.judged
        by_task.setdefault(result.task_id, [])
        if verdict is not None:
            by_task[result.task_id].append(verdict)
    return by_task


def pass_at_k(results: Iterable[TaskResult], k: int) -> float | None:
    """The unbiased pass@k over tasks with at least ``k`` decided samples; ``None`` if none."""
    values = [
        1.0 - comb(len(v) - sum(v), k) / comb(len(v), k)
        for v in _verdicts(results).values()
        if len(v) >= k
    ]
    return statistics.fmean(values) if values else None


def sample_ks(samples: int) -> list[int]:
    """The k reported for ``samples`` samples: powers of two below it, and itself."""
    ks = [1]
    while ks[-1] * 2 < samples:
        ks.append(ks[-1] * 2)
    return ks if samples == 1 else [*ks, samples]


def sample_stats(results: Sequence[TaskResult]) -> SampleStats | None:
    """The sample metrics of a run; ``None`` when every task has one sample."""
    samples = 1 + max((r.sample for r in results), default=0)
    if samples == 1:
        return None
    per_sample: dict[int, float | None] = {}
    for index in range(samples):
        decided = [r.judged for r in results if r.sample == index and r.judged is not None]
        per_sample[index] = sum(decided) / len(decided) if decided else None
    known = [v for v in per_sample.values() if v is not None]
    return SampleStats(
        samples=samples,
        tasks=len({r.task_id for r in results}),
        per_sample=per_sample,
        mean=statistics.fmean(known) if known else None,
        stdev=statistics.stdev(known) if len(known) > 1 else None,
        pass_at_k={k: pass_at_k(results, k) for k in sample_ks(samples)},
    )


def sample_lines(stats: SampleStats | None) -> list[str]:
    """Console lines: ``3 samples per task: mean Pass@1 61.0% (sd 2.1), pass@1 61.0%, ...``."""
    if stats is None:
        return []

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"

    spread = f" (sd {stats.stdev:.1%})" if stats.stdev is not None else ""
    ks = ", ".join(f"pass@{k} {pct(v)}" for k, v in stats.pass_at_k.items())
    return [f"{stats.samples} samples per task: mean Pass@1 {pct(stats.mean)}{spread}; {ks}"]
