"""``omnilab score``, ``metrics``, ``compare`` and ``analyze``: read finished runs back.

Each command parses its options, calls one library function of :mod:`omnilab.bench` and renders
the result with rich; tables and JSON go to stdout. User mistakes are
:class:`~omnilab.errors.OmnilabError` s, printed by ``omnilab.cli.main`` as one line.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from omnilab.bench.errors import BenchError
from omnilab.bench.metrics import DEFAULT_GROUPS
from omnilab.bench.reports import analyze_run, compare_sources, open_source, source_metrics
from omnilab.bench.rescore import rescore_run, resolve_judges
from omnilab.bench.results import unequal_failures
from omnilab.bench.roles import role_model
from omnilab.bench.run_dir import RunDir, load_results
from omnilab.bench.samples import sample_lines
from omnilab.bench.tables import (
    analysis_tables,
    comparison_tables,
    summary_tables,
    task_scores_table,
)
from omnilab.cli._console import err_console, out_console, split_values
from omnilab.terminal import inert_json

__all__ = ["analyze", "compare", "metrics", "score"]

RunArg = Annotated[
    Path, typer.Argument(help="A run folder (or a results .jsonl file).", show_default=False)
]
ScoresOpt = Annotated[
    str | None,
    typer.Option("--scores", help="Read the run's re-scoring scores/NAME.jsonl instead."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
ByOpt = Annotated[
    str,
    typer.Option(
        "--by",
        help="Groupings to show, comma-separated (level, category, task_type, "
        "modalities, required_tools, or a metadata attribute).",
    ),
]
DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data", help="The dataset file, if it moved since the run (answers are read from it)."
    ),
]


def score(
    run: Annotated[Path, typer.Argument(help="The run folder.", show_default=False)],
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge", help="Judge model; repeat for a majority vote (default: bench.judge_model)."
        ),
    ] = None,
    scorer: Annotated[
        str | None, typer.Option("--scorer", help="Scorer (default: the run's).")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Name of the scores file (default: scorer-judge).")
    ] = None,
    data: DataOpt = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1)] = 8,
    rules: Annotated[
        str | None,
        typer.Option(
            "--rules",
            help="Judged scorers: 'strict' (omnilab's default) or 'reference' (the authors' "
            "released evaluation: tag span to the judge, any reply without 'Incorrect' counts, "
            "exact match on untagged last words). Default: the run's.",
        ),
    ] = None,
    tasks: Annotated[
        bool,
        typer.Option(
            "--tasks",
            help="Also list each task's score (automatic when scores are not just 0 and 1, "
            "e.g. --scorer code-x-reward).",
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Score a run's answers again (another judge, scorer or rule set) without running the
    agent; writes scores/NAME.jsonl, never touching results.jsonl. The run's files are read
    without following links (it may be another user's): a linked results file is an error."""
    from omnilab.bench.scoring.judging import REFERENCE_RULES, STRICT_RULES

    named = {"strict": STRICT_RULES, "reference": REFERENCE_RULES}
    if rules is not None and rules not in named:
        raise BenchError(f"--rules {rules!r}: use strict or reference")
    folder = RunDir(run).untrusted()  # maybe another user's: no link followed, no FIFO
    stored = folder.read_config()
    chosen = scorer or stored.scorer
    judges = resolve_judges(chosen, split_values(judge))
    chosen_rules = named[rules] if rules is not None else stored.scoring_rules
    outcome = asyncio.run(
        rescore_run(
            folder,
            scorer_name=chosen,
            judges=judges,
            name=name,
            data=data,
            concurrency=concurrency,
            rules=chosen_rules,
        )
    )
    if json_out:
        typer.echo(inert_json(outcome.model_dump_json(indent=2)))
        return
    console = out_console()
    for renderable in summary_tables(outcome.summary, label=f"{run.name}:{outcome.info.name}"):
        console.print(renderable)
    scored = load_results(outcome.path)
    if tasks or any(r.score is not None and r.score.value not in (0.0, 1.0) for r in scored):
        console.print(task_scores_table(scored))
    console.print(
        f"scores {outcome.path}; metrics: omnilab metrics {run} --scores {outcome.info.name}"
    )


def metrics(
    run: RunArg,
    scores: ScoresOpt = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Groupings to show, comma-separated (default: the benchmark's own: Level and "
            "category for OmniGAIA, question type for OmniAgent, retrieval modality and audio "
            "type for Omni-DeepSearch).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Metrics of a run: the benchmark's own figures (Pass@1; for OmniAgent, accuracy, mean IoU
    and MRA per question type) with intervals, EM, groups, tokens, cost, time; writes
    metrics.json (or scores/NAME.metrics.json)."""
    source = open_source(run, scores)
    groups = split_values([by]) if by is not None else None
    summary = source_metrics(
        source, groups=tuple(dict.fromkeys([*DEFAULT_GROUPS, *(groups or [])]))
    )
    if json_out:
        typer.echo(inert_json(summary.model_dump_json(indent=2)))
        return
    console = out_console()
    for renderable in summary_tables(summary, label=source.label, groups=groups):
        console.print(renderable)
    for line in sample_lines(summary.samples):
        console.print(line)
    if source.run is not None:
        from omnilab.bench.search_stats import run_search_stats, search_table

        searches = run_search_stats(source.run)  # deepsearch runs: searches and budgets
        if searches is not None:
            console.print(search_table(searches))


def compare(
    a: Annotated[Path, typer.Argument(help="Run folder or results file A.", show_default=False)],
    b: Annotated[Path, typer.Argument(help="Run folder or results file B.", show_default=False)],
    by: ByOpt = "level,category",
    allow_failed: Annotated[
        bool,
        typer.Option(
            "--allow-failed",
            help="Compare even when one run has failed tasks (timeouts, crashes, missing media) "
            "that the other answered; the difference is then partly failures, not answers.",
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Two runs (or a run and its re-scoring) side by side, with McNemar's test on shared tasks.

    Refuses when one run has failed tasks the other does not (unless --allow-failed, which
    still prints a warning): a failed run counts as wrong, so the comparison would measure the
    failures rather than the answers."""
    groups = tuple(split_values([by]))
    source_a, source_b = open_source(a), open_source(b)
    unequal = unequal_failures(
        load_results(source_a.results_file),
        load_results(source_b.results_file),
        labels=(source_a.label, source_b.label),
    )
    if unequal and not allow_failed:
        raise BenchError(
            f"{unequal}; rerun them (omnilab eval --out RUN --resume --retry-failed) or pass "
            "--allow-failed to compare anyway"
        )
    if unequal:
        err_console().print(f"warning: {unequal}", style="bold red", markup=False)
    comparison = compare_sources(source_a, source_b, groups=groups)
    if json_out:
        typer.echo(inert_json(comparison.model_dump_json(indent=2)))
        return
    console = out_console()
    for renderable in comparison_tables(comparison, groups=groups):
        console.print(renderable)
    if comparison.only_in_a or comparison.only_in_b:
        console.print(
            f"not shared: {comparison.only_in_a} tasks only in A, {comparison.only_in_b} only in B"
        )


def analyze(
    run: RunArg,
    scores: ScoresOpt = None,
    analyst: Annotated[
        str | None, typer.Option("--analyst", help="Analyst model (default: bench.analyst_model).")
    ] = None,
    data: DataOpt = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1)] = 4,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            min=1,
            help="Most tokens per analyst reply (a small model may otherwise ramble for minutes).",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Label each failed task with OmniGAIA's error categories (B.6); writes analysis.json.

    The run's files are read without following links (it may be another user's): a linked
    results file is an error, a linked trajectory a notice (that task is judged from its result)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    source = open_source(run, scores)
    model = role_model("analyst", analyst)
    columns = (TextColumn(f"analysing failed tasks with {model.name}"), BarColumn())
    with Progress(*columns, MofNCompleteColumn(), console=err_console(), transient=True) as bar:
        job = bar.add_task("analyse", total=None)
        analysis = asyncio.run(
            analyze_run(
                source,
                model,
                data=data,
                concurrency=concurrency,
                on_label=lambda _, done, total: bar.update(job, completed=done, total=total),
                max_tokens=max_tokens,
            )
        )
    for notice in analysis.notices:  # a refused run file (a link, a FIFO): one line each
        err_console().print(f"notice: {notice}", markup=False)
    if json_out:
        typer.echo(inert_json(analysis.model_dump_json(indent=2)))
        return
    console = out_console()
    for renderable in analysis_tables(analysis):
        console.print(renderable)
