"""Uncertainty and paired comparison, which none of the papers report.

* :func:`bootstrap_ci` — a percentile bootstrap confidence interval of a mean, seeded, so the
  same results always give the same interval.
* :func:`mcnemar_test` / :func:`compare_runs` — McNemar's test on the tasks two runs share:
  exact two-sided binomial when there are fewer than 25 discordant tasks, else the chi-square
  statistic with continuity correction (1 degree of freedom).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

__all__ = ["Interval", "McNemarResult", "TestMethod", "bootstrap_ci", "mcnemar_test"]

TestMethod = Literal["exact", "chi2"]

_CHUNK = 1_000  # resamples drawn at once: bounds memory at 1000 x n indices


class Interval(BaseModel):
    """A point estimate with a confidence interval."""

    point: float
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int
    n: int


def bootstrap_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` (e.g. 0/1 per-task verdicts).

    Raises ``ValueError`` for no values, a confidence outside (0, 1) or fewer than 1 resample.
    """
    if not values:
        raise ValueError("bootstrap_ci needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1) (got {confidence})")
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    # Imported here, not with the module: numpy takes ~0.1 s to import, which every command
    # importing omnilab.bench paid, intervals or not.
    import numpy as np

    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    if np.isin(data, (0.0, 1.0)).all():
        # 0/1 verdicts: a resample's count of ones is exactly Binomial(n, mean), so draw the
        # counts instead of n picks per resample (same distribution; 1,000 tasks x 10,000
        # resamples took about 0.2 s at the end of every run).
        means = rng.binomial(len(data), data.mean(), size=resamples) / len(data)
    else:
        means = np.empty(resamples)
        for start in range(0, resamples, _CHUNK):
            size = min(_CHUNK, resamples - start)
            picks = rng.integers(0, len(data), size=(size, len(data)))
            means[start : start + size] = data[picks].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return Interval(
        point=float(data.mean()),
        low=float(low),
        high=float(high),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        n=len(data),
    )


class McNemarResult(BaseModel):
    """A paired comparison of runs A and B over their shared, decided tasks."""

    shared: int
    """Tasks both runs have a verdict for."""
    both_correct: int
    only_a: int
    """Right in A, wrong in B."""
    only_b: int
    """Wrong in A, right in B."""
    both_wrong: int
    excluded: int = 0
    """Shared tasks left out because a verdict was undecided (judge error) in either run."""
    statistic: float
    """The chi-square statistic, or the smaller discordant count for the exact test."""
    p_value: float
    method: TestMethod


def mcnemar_test(
    only_a: int, only_b: int, *, exact_below: int = 25
) -> tuple[float, float, TestMethod]:
    """``(statistic, two-sided p-value, method)`` from the two discordant counts.

    Below ``exact_below`` discordant tasks: exact binomial test of ``min(b, c)`` under
    ``Binomial(b + c, 1/2)``; else ``(|b - c| - 1)^2 / (b + c)`` against chi-square(1).
    """
    if only_a < 0 or only_b < 0:
        raise ValueError("counts must be >= 0")
    n = only_a + only_b
    if n == 0:
        return 0.0, 1.0, "exact"
    if n < exact_below:
        k = min(only_a, only_b)
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
        return float(k), min(1.0, 2.0 * tail), "exact"
    statistic = (abs(only_a - only_b) - 1.0) ** 2 / n
    # The chi-square(1) survival function: P(X > x) = erfc(sqrt(x / 2)).
    return statistic, math.erfc(math.sqrt(statistic / 2.0)), "chi2"
