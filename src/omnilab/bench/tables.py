"""Rich tables of run metrics, comparisons and error analyses (what the ``omnilab`` commands
print). Pure rendering: each function takes a result object and returns renderables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.table import Table

from omnilab.bench.metrics import NO_GROUP, Rate, RunSummary, native_groups
from omnilab.bench.progress import format_tokens
from omnilab.bench.results import TaskResult
from omnilab.bench.stats import Interval

if TYPE_CHECKING:
    # Types only: `omnilab eval` renders summaries, and the error analysis and run comparison
    # modules (with the dataset loaders they use) added ~60 ms to its start.
    from omnilab.bench.analysis import ErrorAnalysis
    from omnilab.bench.reports import Comparison

__all__ = ["analysis_tables", "comparison_tables", "summary_tables"]


def _pct(rate: Rate) -> str:
    return "-" if rate.value is None else f"{rate.value * 100:.1f}"


def _ci(interval: Interval | None) -> str:
    if interval is None:
        return ""
    return f"[{interval.low * 100:.1f}, {interval.high * 100:.1f}]"


def _shown(groups: dict[str, dict[str, Rate]], names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The groupings worth a table, and those hidden because no task has a value for them."""
    shown: list[str] = []
    hidden: list[str] = []
    for name in names:
        if name not in groups:
            continue
        (shown if set(groups[name]) != {NO_GROUP} else hidden).append(name)
    return shown, hidden


def _table(title: str) -> Table:
    return Table(title=title, title_justify="left", box=None, header_style="bold", pad_edge=False)


def _overview(summary: RunSummary, label: str) -> Table:
    table = _table(label)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("detail")
    if summary.dataset == "omniagent":
        # OmniAgent's own figures first: accuracy, mean IoU and mean MRA per question type.
        for figure in summary.figures:
            value = "-" if figure.value is None else f"{figure.value * 100:.1f}"
            table.add_row(figure.name, value, f"n={figure.n} {_ci(figure.interval)}".rstrip())
    p1, em = summary.pass_at_1, summary.em
    table.add_row(
        "Pass@1 (judged)",
        _pct(p1),
        f"{p1.correct}/{p1.total} {_ci(summary.pass_at_1_ci)}".rstrip()
        + (f", {p1.undecided} undecided" if p1.undecided else ""),
    )
    table.add_row("exact match", _pct(em), f"{em.correct}/{em.total} {_ci(summary.em_ci)}".rstrip())
    for rule, rate in summary.rules.items():
        # Both rule sets from the same judge replies (omnilab.bench.scoring.judging).
        needs = f", {rate.undecided} need their own judge call" if rate.undecided else ""
        table.add_row(f"Pass@1 ({rule} rules)", _pct(rate), f"{rate.correct}/{rate.total}{needs}")
    table.add_row(
        "tasks", str(summary.tasks), f"{summary.failed_runs} failed runs (count as wrong)"
    )
    if summary.non_empty_rate is not None:
        table.add_row("non-empty answers", f"{summary.non_empty_rate * 100:.1f}", "")
    usage = summary.usage
    cost = "" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"
    table.add_row(
        "tokens",
        format_tokens(usage.total_tokens),
        f"{format_tokens(usage.prompt_tokens)} in, {format_tokens(usage.completion_tokens)} out"
        + (f", {cost} ({usage.tasks_with_cost} tasks priced)" if cost else ""),
    )
    calls = summary.tool_calls
    table.add_row(
        "tool calls / task", f"{calls.mean:.2f}", f"median {calls.median:g}, max {calls.max}"
    )
    wall = summary.wall_time
    table.add_row(
        "seconds / task", f"{wall.mean_s:.2f}", f"p90 {wall.p90_s:.2f}, max {wall.max_s:.2f}"
    )
    for name, stat in summary.run_stats.items():  # figures the agent reported per run
        spread = ", ".join(f"{v}: {n}" for v, n in stat.distribution.items())
        table.add_row(f"{name} (mean)", f"{stat.mean:.2f}", f"n={stat.tasks}; {spread}")
    return table


def _continuous(rates: dict[str, Rate]) -> bool:
    """Whether some group's mean score differs from its share correct (IoU, MRA)."""
    return any(
        r.mean_score is not None and r.value is not None and abs(r.mean_score - r.value) > 1e-9
        for r in rates.values()
    )


def _group_table(name: str, judged: dict[str, Rate], em: dict[str, Rate]) -> Table:
    table = _table(f"by {name}")
    table.add_column(name)
    table.add_column("n", justify="right")
    table.add_column("Pass@1", justify="right")
    scores = _continuous(judged)
    if scores:
        table.add_column("mean score", justify="right")
    table.add_column("EM", justify="right")
    table.add_column("undecided", justify="right")
    for group, rate in judged.items():
        em_rate = em.get(group)
        mean = "-" if rate.mean_score is None else f"{rate.mean_score * 100:.1f}"
        table.add_row(
            group,
            str(rate.total + rate.undecided),
            _pct(rate),
            *([mean] if scores else []),
            _pct(em_rate) if em_rate is not None else "-",
            str(rate.undecided) if rate.undecided else "",
        )
    return table


def summary_tables(
    summary: RunSummary, *, label: str, groups: Sequence[str] | None = None
) -> list[RenderableType]:
    """The overview (the benchmark's own figures, Pass@1 with its interval, EM, failures,
    tokens, cost, time) and one table per grouping present in the summary (default: those the
    benchmark's paper reports). A grouping no task has a value for is named, not tabled."""
    out: list[RenderableType] = [_overview(summary, label)]
    names = native_groups(summary.dataset) if groups is None else groups
    shown, hidden = _shown(summary.groups, names)
    for name in shown:
        out.append(_group_table(name, summary.groups[name], summary.em_groups.get(name, {})))
    if hidden:
        out.append(f"no task has a {' or '.join(hidden)}; not tabled")
    return out


def comparison_tables(comparison: Comparison, *, groups: Sequence[str]) -> list[RenderableType]:
    """Both runs side by side (overall and per group) and McNemar's test."""
    a, b = comparison.summary_a, comparison.summary_b
    la, lb = comparison.a.label, comparison.b.label
    overall = _table("Pass@1")
    overall.add_column("")
    overall.add_column(la, justify="right")
    overall.add_column(lb, justify="right")
    overall.add_row("tasks", str(a.tasks), str(b.tasks))
    overall.add_row("Pass@1", _pct(a.pass_at_1), _pct(b.pass_at_1))
    overall.add_row("95% interval", _ci(a.pass_at_1_ci), _ci(b.pass_at_1_ci))
    overall.add_row("exact match", _pct(a.em), _pct(b.em))
    overall.add_row("failed runs", str(a.failed_runs), str(b.failed_runs))
    out: list[RenderableType] = [overall]
    for name in groups:
        ga, gb = a.groups.get(name, {}), b.groups.get(name, {})
        if set(ga) | set(gb) <= {NO_GROUP}:
            continue  # no task of either run has a value for it
        table = _table(f"Pass@1 by {name}")
        table.add_column(name)
        table.add_column(la, justify="right")
        table.add_column(lb, justify="right")
        for group in dict.fromkeys([*ga, *gb]):
            ra, rb = ga.get(group), gb.get(group)
            table.add_row(group, _pct(ra) if ra else "-", _pct(rb) if rb else "-")
        out.append(table)
    t = comparison.test
    test = _table("McNemar's test on shared tasks")
    test.add_column("shared", justify="right")
    test.add_column("both right", justify="right")
    test.add_column(f"only {la}", justify="right")
    test.add_column(f"only {lb}", justify="right")
    test.add_column("both wrong", justify="right")
    test.add_column("p", justify="right")
    test.add_row(
        str(t.shared),
        str(t.both_correct),
        str(t.only_a),
        str(t.only_b),
        str(t.both_wrong),
        f"{t.p_value:.4g} ({t.method})",
    )
    out.append(test)
    return out


def analysis_tables(analysis: ErrorAnalysis) -> list[RenderableType]:
    """Error categories over the labelled failures, overall and per Level."""
    from omnilab.bench.analysis import ERROR_CATEGORIES

    levels = list(analysis.by_level)
    table = _table(
        f"error categories ({analysis.analysed} failed tasks labelled, "
        f"{analysis.failures} analyses failed)"
    )
    table.add_column("category")
    table.add_column("all", justify="right")
    for level in levels:
        table.add_column(level, justify="right")
    for category in ERROR_CATEGORIES:
        count = analysis.frequencies.get(category, 0)
        share = f"{count} ({count / analysis.analysed:.0%})" if analysis.analysed else "0"
        table.add_row(category, share, *(str(analysis.by_level[lv][category]) for lv in levels))
    out: list[RenderableType] = [table]
    if analysis.skipped:
        skipped = ", ".join(f"{n} {reason}" for reason, n in analysis.skipped.items())
        out.append(f"not analysed: {skipped}")
    return out


def task_scores_table(results: Sequence[TaskResult]) -> Table:
    """One row per task: its score value and verdict, and the exit reason where the scorer
    gives one (``code-x-reward``)."""
    table = _table("scores by task")
    for column in ("task", "value", "correct", "detail"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for result in results:
        name = result.task_id if result.sample == 0 else f"{result.task_id}~{result.sample}"
        score = result.score
        if score is None:
            table.add_row(name, "-", "-", result.error or "")
            continue
        detail = score.details.get("exit_reason") or score.error or ""
        verdict = "-" if score.correct is None else ("yes" if score.correct else "no")
        table.add_row(name, f"{score.value:.3f}", verdict, str(detail))
    return table
