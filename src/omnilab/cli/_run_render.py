"""How ``omnilab eval`` shows a run (:mod:`omnilab.cli.eval`): the header above a progress bar
on stderr while it runs, then the summary tables, sample lines and where everything was
written on stdout."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from rich.console import Console

from omnilab.bench.header import RunHeader, render_header
from omnilab.bench.progress import RichProgress
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import RunOutcome, RunPlan, execute
from omnilab.bench.samples import sample_lines
from omnilab.bench.tables import summary_tables

__all__ = ["execute_with_progress", "render_outcome"]


def render_outcome(outcome: RunOutcome, console: Console) -> None:
    run = RunDir(outcome.run)
    for renderable in summary_tables(outcome.summary, label=f"run {run.path.name}"):
        console.print(renderable)
    for line in sample_lines(outcome.summary.samples):
        console.print(line)
    from omnilab.bench.search_stats import run_search_stats, search_table

    # deepsearch runs: searches and budgets, read back from the trajectories only when a task
    # reported searches (reading a thousand files took ~0.2 s at the end of every run).
    reported = "searches" in outcome.summary.run_stats
    searches = run_search_stats(run.path) if reported else None
    if searches is not None:
        console.print(search_table(searches))
    from omnilab.bench.outcome_notes import outcome_notes

    for note in outcome_notes(run.results(), str(run.path)):
        console.print(note, markup=False, highlight=False)
    what = "tasks" if outcome.summary.samples is None else "rollouts (task x sample)"
    console.print(
        f"{outcome.ran} {what} run now, {outcome.already_done} were done before, "
        f"{outcome.selected} selected; results {run.results_file}, trajectories "
        f"{run.path / 'trajectories'}, metrics {run.metrics_file}"
    )


def _print_header(err: Console) -> Callable[[RunHeader], None]:
    def show(header: RunHeader) -> None:
        for line in render_header(header):
            style = "bold yellow" if line.startswith("warning:") else None
            err.print(line, style=style, markup=False)

    return show


async def execute_with_progress(
    plan: RunPlan, concurrency: int, progress: bool, err: Console
) -> RunOutcome:
    on_header = _print_header(err)
    if not progress:
        return await execute(plan, concurrency=concurrency, on_header=on_header)
    selected = {t.id for t in plan.tasks}
    done = [r for r in plan.done if r.task_id in selected]
    total = len(plan.tasks) * plan.config.samples
    bar = RichProgress(total, done=done, console=err)
    with contextlib.ExitStack() as stack:

        def start(header: RunHeader) -> None:
            on_header(header)  # printed above the bar, which starts with the first task
            stack.enter_context(bar)

        return await execute(plan, concurrency=concurrency, on_result=bar.add, on_header=start)
