"""Reading runs back: results of a run or a re-scoring, metrics, comparison, error analysis.

A *source* is a run folder (its ``results.jsonl``), a run folder plus the name of one of its
re-scorings (``scores/<name>.jsonl``), or a results file given directly. Metrics and comparison
read only results; error analysis also reads the dataset (for the questions and solutions) and
each task's trajectory (for the trace the analyst is shown).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from omnilab.bench.analysis import (
    ErrorAnalysis,
    LabelHook,
    TaskErrorLabels,
    analyze_errors,
    default_trace,
)
from omnilab.bench.analysis_partial import PartialLabels, read_partial_labels
from omnilab.bench.datasets import load_dataset
from omnilab.bench.errors import BenchError
from omnilab.bench.metrics import RunSummary, compare_runs, summarize
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunDir, load_results, write_atomic
from omnilab.bench.stats import McNemarResult
from omnilab.models import GenerateConfig, Model
from omnilab.textcut import cut_text
from omnilab.trajectory import TrajectoryError, read_trajectory, render_text

__all__ = [
    "Comparison",
    "Source",
    "analyze_run",
    "compare_sources",
    "open_source",
    "source_metrics",
]

_TRACE_CHARS = 40_000
"""Longest trace shown to the analyst: the start and the end of longer ones are kept."""


class Source(BaseModel):
    """Where a set of results comes from."""

    label: str
    """How tables name it: the run folder's name, plus ``:scores`` for a re-scoring."""
    results_file: Path
    run: Path | None = None
    """The run folder, when the results belong to one."""
    scores: str | None = None


def open_source(path: str | Path, scores: str | None = None) -> Source:
    """The results at ``path``: a run folder (with ``scores``, one of its re-scorings) or a
    results file. Raises :class:`BenchError` for anything else.

    The run folder (also the one a results file lies in) is read as another user's from here on
    (:meth:`RunDir.untrusted`): ``metrics``, ``compare``, ``analyze`` and leaderboards read runs
    that may be shared, and a link planted beneath one must not make them read its target."""
    path = Path(path)
    if path.is_dir():
        run = RunDir(path).untrusted()
        if scores is not None:
            file = run.scores_file(scores)
            if not file.is_file() and run.scores_file(scores.replace("_", "-")).is_file():
                # re-scorings written before names kept the scorer's spelling
                scores = scores.replace("_", "-")
                file = run.scores_file(scores)
            if not file.is_file():
                known = sorted(p.stem for p in run.scores_dir.glob("*.jsonl"))
                listed = ", ".join(known) if known else "none"
                raise BenchError(f"{path} has no scores named {scores!r} (scores: {listed})")
            return Source(label=f"{path.name}:{scores}", results_file=file, run=path, scores=scores)
        if not run.results_file.is_file():
            raise BenchError(f"{path} holds no results.jsonl; is it a run folder?")
        return Source(label=path.name, results_file=run.results_file, run=path)
    if scores is not None:
        raise BenchError("--scores needs a run folder, not a results file")
    if path.is_file():
        # A re-scoring file inside a run folder still knows its run (for trajectories).
        parent = path.parent.parent if path.parent.name == "scores" else path.parent
        owner = parent if RunDir(parent).is_run() else None
        if owner is not None:
            RunDir(owner).untrusted()
        label = f"{parent.name}:{path.stem}" if path.parent.name == "scores" else path.stem
        return Source(label=label, results_file=path, run=owner)
    raise BenchError(f"{path} does not exist; give a run folder or a results .jsonl file")


def _metrics_file(source: Source) -> Path | None:
    if source.run is None:
        return None
    run = RunDir(source.run)
    if source.results_file == run.results_file:
        return run.metrics_file
    return source.results_file.with_name(f"{source.results_file.stem}.metrics.json")


def source_metrics(source: Source, *, groups: tuple[str, ...] | None = None) -> RunSummary:
    """The summary of a source's results, also written beside them when they are a run's
    (``metrics.json`` or ``scores/<name>.metrics.json``)."""
    results = load_results(source.results_file)
    summary = summarize(results) if groups is None else summarize(results, groups=groups)
    target = _metrics_file(source)
    if target is not None:
        write_atomic(target, summary.model_dump_json(indent=2) + "\n")
    return summary


class Comparison(BaseModel):
    """Two sources side by side, and McNemar's test over the tasks they share."""

    a: Source
    b: Source
    summary_a: RunSummary
    summary_b: RunSummary
    test: McNemarResult
    only_in_a: int
    only_in_b: int


def compare_sources(a: Source, b: Source, *, groups: tuple[str, ...]) -> Comparison:
    """Metrics of both sources (by ``groups``) and the paired test on shared tasks."""
    results_a, results_b = load_results(a.results_file), load_results(b.results_file)
    ids_a = {r.task_id for r in results_a}
    ids_b = {r.task_id for r in results_b}
    return Comparison(
        a=a,
        b=b,
        summary_a=summarize(results_a, groups=groups),
        summary_b=summarize(results_b, groups=groups),
        test=compare_runs(results_a, results_b),
        only_in_a=len(ids_a - ids_b),
        only_in_b=len(ids_b - ids_a),
    )


def trajectory_trace(run: RunDir, result: TaskResult, notices: list[str] | None = None) -> str:
    """The trace the analyst reads: the task's trajectory step by step (start and end kept
    when it is very long), else the result alone (tool counts, error, output). A trajectory
    that is there but refused (a link, a FIFO, a damaged file) adds one line to ``notices``."""
    path = run.trajectory_file(result.task_id, result.sample)
    try:
        text = render_text(read_trajectory(path), width=2000)
    except TrajectoryError as e:
        if notices is not None and os.path.lexists(path):
            notices.append(f"{e}; task {result.task_id} analysed without its trajectory")
        return default_trace(result)
    return cut_text(text, _TRACE_CHARS, head_share=0.5, what="characters of the trace")


async def analyze_run(
    source: Source,
    analyst: Model,
    *,
    data: Path | None = None,
    concurrency: int = 4,
    on_label: LabelHook | None = None,
    max_tokens: int | None = None,
) -> ErrorAnalysis:
    """OmniGAIA B.6 error analysis of the failed tasks of ``source`` (a run's results or
    re-scoring), written to ``analysis.json`` (or ``scores/<name>.analysis.json``).

    Each task's labels are appended to ``<that name>.partial.jsonl`` as they come, so a stopped
    analysis keeps what the analyst said: the next one by the same analyst reuses them, and
    the file is removed once the analysis is written.

    The run may be another user's: its files are read as ``omnilab report`` reads them, never
    through a link nor from a FIFO; a refused results file is a :class:`BenchError`, a refused
    trajectory a line of ``notices`` (the task is analysed from its result alone)."""
    if source.run is None:
        raise BenchError("error analysis needs a run folder (it reads run.json and trajectories)")
    run = RunDir(source.run).untrusted()
    config = run.read_config()
    loaded = load_dataset(
        config.dataset,
        run.dataset_file(config, data),
        media_root=config.media_root,
        allow_outside_media_root=config.allow_outside_media_root,
    )
    results = load_results(source.results_file)
    target = (
        run.analysis_file
        if source.scores is None
        else run.scores_dir / f"{source.scores}.analysis.json"
    )
    partial = target.with_name(target.name.removesuffix(".json") + ".partial.jsonl")
    known = read_partial_labels(partial, analyst.name)
    notices: list[str] = []
    with PartialLabels(partial, analyst.name, known) as saver:

        def got(label: TaskErrorLabels, done: int, total: int) -> None:
            saver.add(label)
            if on_label is not None:
                on_label(label, done, total)

        analysis = await analyze_errors(
            results,
            {t.id: t for t in loaded.tasks},
            analyst,
            trace=lambda r: trajectory_trace(run, r, notices),
            concurrency=concurrency,
            config=GenerateConfig(temperature=0.0, max_tokens=max_tokens),
            known=known,
            on_label=got,
        )
    analysis = analysis.model_copy(update={"notices": notices})
    write_atomic(target, analysis.model_dump_json(indent=2) + "\n")
    partial.unlink(missing_ok=True)
    return analysis
