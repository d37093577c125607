"""Metrics: pure functions over a list of :class:`~omnilab.bench.results.TaskResult`.

Pass@1 is the share of tasks judged correct. A task whose verdict could not be decided (a judge
error) is left out of the denominator and counted in ``undecided``; a task whose run failed is
wrong. Groupings follow the papers (:data:`NATIVE_GROUPS`): OmniGAIA by ``level`` and
``category``, Omni-DeepSearch by ``retrieval_modality`` and ``audio_type``, OmniAgent by
``question_type`` (and the dataset suffix, ``question_subtype``); every benchmark also by
``modalities`` (input combination) and ``required_tools`` (the combination the task needs).

Each benchmark's headline figures are :func:`native_figures`: Pass@1 for OmniGAIA and
Omni-DeepSearch; for OmniAgent, per question type, accuracy (MCQ, NUM, FF), mean temporal IoU
(TR) and mean MRA (SIZE), as its paper reports them (§4, "MCQ accuracy, Temporal IoU, MRA").
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from omnilab.bench.figures import NATIVE_GROUPS, Figure, native_figures, native_groups
from omnilab.bench.results import TaskResult
from omnilab.bench.samples import SampleStats, sample_stats
from omnilab.bench.stats import Interval, McNemarResult, bootstrap_ci, mcnemar_test

__all__ = [
    "DEFAULT_GROUPS",
    "NATIVE_GROUPS",
    "Figure",
    "Measure",
    "Rate",
    "RunStat",
    "RunSummary",
    "ToolCallStats",
    "UsageStats",
    "WallTimeStats",
    "accuracy",
    "accuracy_by",
    "accuracy_ci",
    "compare_runs",
    "group_key",
    "native_figures",
    "native_groups",
    "non_empty_rate",
    "pass_at_1",
    "pass_at_1_by_rules",
    "run_stats",
    "summarize",
    "tool_call_stats",
    "usage_stats",
    "wall_time_stats",
]

Measure = Literal["judged", "em"]
GroupKey = str | Callable[[TaskResult], str | None]

DEFAULT_GROUPS = ("level", "category", "task_type", "modalities", "required_tools")
NO_GROUP = "(none)"
# Known orders, so tables read Easy, Medium, Hard rather than alphabetically.
_ORDER = {
    name: rank
    for rank, name in enumerate(("Easy", "Medium", "Hard", "MCQ", "TR", "NUM", "SIZE", "FF"))
}


class Rate(BaseModel):
    """A share of tasks: ``correct / total`` over the decided tasks."""

    correct: int
    total: int
    """Tasks with a verdict (undecided ones excluded)."""
    undecided: int = 0
    value: float | None
    """``None`` when no task has a verdict."""
    mean_score: float | None = None
    """Mean of the scores' values (IoU, MRA, 0/1) over the decided tasks."""


def _verdict(result: TaskResult, measure: Measure) -> bool | None:
    return result.judged if measure == "judged" else result.em


def accuracy(results: Iterable[TaskResult], *, measure: Measure = "judged") -> Rate:
    """Share of correct tasks by the judged verdict (Pass@1) or by exact match."""
    items = list(results)
    verdicts = [_verdict(r, measure) for r in items]
    decided = [v for v in verdicts if v is not None]
    # Continuous scores (IoU, MRA) of the decided tasks; a failed run scores 0.
    values = [
        r.score.value if r.score is not None else 0.0
        for r, v in zip(items, verdicts, strict=True)
        if v is not None
    ]
    return Rate(
        correct=sum(decided),
        total=len(decided),
        undecided=len(verdicts) - len(decided),
        value=sum(decided) / len(decided) if decided else None,
        mean_score=sum(values) / len(values) if values else None,
    )


RULES = ("strict", "reference")
"""The scoring rules whose verdicts a judged scorer records per task
(:mod:`omnilab.bench.scoring.judging`)."""


def pass_at_1_by_rules(results: Iterable[TaskResult]) -> dict[str, Rate]:
    """Pass@1 under omnilab's strict rules and under the authors' reference rules, from the
    verdicts each score recorded; empty when no score recorded them. ``undecided`` counts the
    tasks only a new judge call could decide under that rule (a failed run counts as wrong)."""
    items = list(results)
    if not any(r.score is not None and "reference" in r.score.details for r in items):
        return {}
    out: dict[str, Rate] = {}
    for rule in RULES:
        verdicts: list[bool | None] = []
        for r in items:
            if r.score is None:
                if r.error is not None:
                    verdicts.append(False)
                continue
            if rule not in r.score.details:
                continue
            value = r.score.details[rule]
            verdicts.append(None if value is None else bool(value))
        decided = [v for v in verdicts if v is not None]
        out[rule] = Rate(
            correct=sum(decided),
            total=len(decided),
            undecided=len(verdicts) - len(decided),
            value=sum(decided) / len(decided) if decided else None,
        )
    return out


def pass_at_1(results: Iterable[TaskResult]) -> Rate:
    """Pass@1: one attempt per task, judged correct (OmniGAIA's headline metric)."""
    return accuracy(results, measure="judged")


def group_key(result: TaskResult, key: GroupKey) -> str:
    """The group of ``result`` under ``key``: a callable, ``modalities``, ``dataset``, or a
    metadata field or attribute name; tasks without a value fall in ``(none)``."""
    if callable(key):
        value = key(result)
    elif key == "modalities":
        value = result.modalities
    elif key == "dataset":
        value = result.dataset
    else:
        value = result.metadata.get(key)
    return value if value else NO_GROUP


def accuracy_by(
    results: Iterable[TaskResult], key: GroupKey, *, measure: Measure = "judged"
) -> dict[str, Rate]:
    """Accuracy per group, groups in a natural order (known orders first, then by name)."""
    groups: dict[str, list[TaskResult]] = {}
    for result in results:
        groups.setdefault(group_key(result, key), []).append(result)
    ordered = sorted(groups, key=lambda g: (g == NO_GROUP, _ORDER.get(g, len(_ORDER)), g))
    return {g: accuracy(groups[g], measure=measure) for g in ordered}


def accuracy_ci(
    results: Iterable[TaskResult],
    *,
    measure: Measure = "judged",
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Interval | None:
    """Bootstrap interval of the accuracy over decided tasks; ``None`` if there are none."""
    decided = [v for v in (_verdict(r, measure) for r in results) if v is not None]
    if not decided:
        return None
    values = [1.0 if v else 0.0 for v in decided]
    return bootstrap_ci(values, confidence=confidence, resamples=resamples, seed=seed)


class ToolCallStats(BaseModel):
    """How many tools the agent called per task, and which."""

    total: int
    mean: float
    median: float
    max: int
    distribution: dict[int, int]
    """Number of tasks by number of calls."""
    by_name: dict[str, int]
    """Calls by tool name over all tasks, most frequent first."""
    tasks_without_calls: int


def tool_call_stats(results: Sequence[TaskResult]) -> ToolCallStats:
    """Tool calls per task and their distribution."""
    counts = [r.tool_call_count for r in results]
    names: Counter[str] = Counter()
    for r in results:
        names.update(r.tool_calls)
    return ToolCallStats(
        total=sum(counts),
        mean=statistics.fmean(counts) if counts else 0.0,
        median=float(statistics.median(counts)) if counts else 0.0,
        max=max(counts, default=0),
        distribution=dict(sorted(Counter(counts).items())),
        by_name=dict(names.most_common()),
        tasks_without_calls=sum(1 for c in counts if c == 0),
    )


class UsageStats(BaseModel):
    """Tokens and money."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    mean_tokens: float
    cost_usd: float | None
    """Total over tasks whose cost is known; ``None`` when none is."""
    tasks_with_cost: int


def usage_stats(results: Sequence[TaskResult]) -> UsageStats:
    """Token totals and cost."""
    prompt = sum(r.usage.prompt_tokens for r in results)
    completion = sum(r.usage.completion_tokens for r in results)
    costs = [r.cost_usd for r in results if r.cost_usd is not None]
    return UsageStats(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        mean_tokens=(prompt + completion) / len(results) if results else 0.0,
        cost_usd=sum(costs) if costs else None,
        tasks_with_cost=len(costs),
    )


def non_empty_rate(results: Sequence[TaskResult]) -> float | None:
    """Share of tasks with a non-empty answer (the ``<answer>`` span, else the output)."""
    if not results:
        return None
    return sum(1 for r in results if r.answer_text) / len(results)


class WallTimeStats(BaseModel):
    """Seconds per task."""

    total_s: float
    mean_s: float
    median_s: float
    p90_s: float
    max_s: float


def wall_time_stats(results: Sequence[TaskResult]) -> WallTimeStats:
    """Wall time per task: total, mean, median, 90th percentile (nearest rank), max."""
    times = sorted(r.wall_s for r in results)
    if not times:
        return WallTimeStats(total_s=0.0, mean_s=0.0, median_s=0.0, p90_s=0.0, max_s=0.0)
    rank = max(1, -(-9 * len(times) // 10))  # ceil(0.9 n), the nearest-rank percentile
    return WallTimeStats(
        total_s=sum(times),
        mean_s=statistics.fmean(times),
        median_s=float(statistics.median(times)),
        p90_s=times[rank - 1],
        max_s=times[-1],
    )


class RunStat(BaseModel):
    """One per-run figure an agent reports (``TaskResult.stats``), over the tasks reporting it."""

    mean: float
    """The mean; for a 0/1 figure (``stopped_early``) the share of runs where it was 1."""
    tasks: int
    distribution: dict[str, int]
    """Number of tasks by value (``{"1": 7, "3": 3}`` rounds)."""


def run_stats(results: Sequence[TaskResult]) -> dict[str, RunStat]:
    """Each figure agents reported per run (e.g. ``rounds`` and ``stopped_early`` of
    ``master``), summarised over the tasks that report it; failed runs count as they stopped."""
    values: dict[str, list[float]] = {}
    for r in results:
        for name, value in r.stats.items():
            values.setdefault(name, []).append(value)
    return {
        name: RunStat(
            mean=statistics.fmean(vs),
            tasks=len(vs),
            distribution={f"{v:g}": n for v, n in sorted(Counter(vs).items())},
        )
        for name, vs in sorted(values.items())
    }


class RunSummary(BaseModel):
    """Everything the papers report about a run, plus confidence intervals."""

    tasks: int
    dataset: str | None = None
    """The results' dataset (the most common one, if they mix)."""
    figures: list[Figure] = Field(default_factory=list)
    """The benchmark's headline figures (:func:`native_figures`)."""
    pass_at_1: Rate
    em: Rate
    pass_at_1_ci: Interval | None
    em_ci: Interval | None
    groups: dict[str, dict[str, Rate]] = Field(default_factory=dict)
    """Judged accuracy per group, by grouping name."""
    em_groups: dict[str, dict[str, Rate]] = Field(default_factory=dict)
    tool_calls: ToolCallStats
    usage: UsageStats
    non_empty_rate: float | None
    wall_time: WallTimeStats
    failed_runs: int
    """Tasks whose run failed (counted as wrong)."""
    samples: SampleStats | None = None
    """Mean over samples and pass@k, for runs with several samples per task."""
    rules: dict[str, Rate] = Field(default_factory=dict)
    """Pass@1 under the strict and the reference scoring rules, side by side
    (:func:`pass_at_1_by_rules`); empty for scorers that do not record both."""
    run_stats: dict[str, RunStat] = Field(default_factory=dict)
    """Per-run figures the agent reported (:func:`run_stats`), e.g. ``rounds``."""


def summarize(
    results: Sequence[TaskResult],
    *,
    groups: Sequence[str] = DEFAULT_GROUPS,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> RunSummary:
    """The full report of one run; ``groups`` names the groupings (metadata keys), to which
    the dataset's :func:`native_groups` are added."""

    def interval(measure: Measure) -> Interval | None:
        return accuracy_ci(
            results, measure=measure, confidence=confidence, resamples=resamples, seed=seed
        )

    datasets = Counter(r.dataset for r in results if r.dataset)
    dataset = datasets.most_common(1)[0][0] if datasets else None
    groups = tuple(dict.fromkeys([*groups, *native_groups(dataset)]))
    return RunSummary(
        tasks=len(results),
        dataset=dataset,
        figures=native_figures(
            results, dataset, confidence=confidence, resamples=resamples, seed=seed
        ),
        pass_at_1=accuracy(results),
        em=accuracy(results, measure="em"),
        pass_at_1_ci=interval("judged"),
        em_ci=interval("em"),
        groups={g: accuracy_by(results, g) for g in groups},
        em_groups={g: accuracy_by(results, g, measure="em") for g in groups},
        tool_calls=tool_call_stats(results),
        usage=usage_stats(results),
        non_empty_rate=non_empty_rate(results),
        wall_time=wall_time_stats(results),
        failed_runs=sum(1 for r in results if r.error is not None),
        samples=sample_stats(results),
        rules=pass_at_1_by_rules(results),
        run_stats=run_stats(results),
    )


def compare_runs(
    a: Iterable[TaskResult],
    b: Iterable[TaskResult],
    *,
    measure: Measure = "judged",
    exact_below: int = 25,
) -> McNemarResult:
    """McNemar's test of runs ``a`` and ``b`` over the tasks both contain (matched by id)."""
    by_key = {r.key: r for r in b}  # task and sample: samples pair with their namesakes
    pairs = [(r, by_key[r.key]) for r in a if r.key in by_key]
    decided = [
        (va, vb)
        for va, vb in ((_verdict(x, measure), _verdict(y, measure)) for x, y in pairs)
        if va is not None and vb is not None
    ]
    only_a = sum(1 for va, vb in decided if va and not vb)
    only_b = sum(1 for va, vb in decided if vb and not va)
    statistic, p_value, method = mcnemar_test(only_a, only_b, exact_below=exact_below)
    return McNemarResult(
        shared=len(decided),
        both_correct=sum(1 for va, vb in decided if va and vb),
        only_a=only_a,
        only_b=only_b,
        both_wrong=sum(1 for va, vb in decided if not va and not vb),
        excluded=len(pairs) - len(decided),
        statistic=statistic,
        p_value=p_value,
        method=method,
    )
