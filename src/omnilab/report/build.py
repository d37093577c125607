"""Writing reports: one run's folder (index, task pages, media, data files), several runs with
their comparison, and a single trajectory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from omnilab import _wsread
from omnilab._atomic import write_atomic
from omnilab._private_paths import add_private_paths
from omnilab.bench.analysis import ErrorAnalysis
from omnilab.bench.errors import BenchError
from omnilab.bench.metrics import summarize
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunConfig, RunDir, file_stem
from omnilab.report.compare import comparison_body
from omnilab.report.html import esc, page, write_assets
from omnilab.report.media import MediaCopier, run_roots
from omnilab.report.parts import Renderer
from omnilab.report.rows import TaskRow
from omnilab.report.run_page import run_body
from omnilab.report.run_report import RunReport
from omnilab.report.trajectory_view import trajectory_body
from omnilab.trajectory import Trajectory, TrajectoryError, read_trajectory

__all__ = ["build_report", "write_run_report", "write_trajectory_page"]


def _config(run: RunDir) -> RunConfig | None:
    if not run.is_run():
        return None
    return run.read_config()


def _analysis(run: RunDir) -> ErrorAnalysis | None:
    try:
        # Through the safe reader: in a run marked untrusted a linked analysis.json (or FIFO) is
        # refused like any other file of the run, and the report goes on without it.
        return ErrorAnalysis.model_validate_json(_wsread.read_bytes(run.analysis_file))
    except (OSError, ValidationError):
        return None


def _trajectory(path: Path) -> Trajectory | None:
    try:
        return read_trajectory(path)
    except TrajectoryError:
        return None


def write_run_report(
    path: Path, out: Path, *, label: str | None = None, media_roots: Sequence[Path] = ()
) -> RunReport:
    """The report of the run folder ``path`` in ``out``: ``index.html``, ``tasks/<id>.html``
    per task, ``media/``, ``assets/`` and ``data/{summary,tasks}.json``. Media are copied from
    beneath the run folder, the media cache and ``media_roots`` (the operator's) only."""
    run = RunDir(path)
    if not run.results_file.is_file():
        raise BenchError(f"{path} holds no results.jsonl; give a run folder (omnilab eval --out)")
    config = _config(run)
    results = run.results()
    title = label or path.name
    out.mkdir(parents=True, exist_ok=True)
    write_assets(out)
    (out / "tasks").mkdir(exist_ok=True)
    rows: list[TaskRow] = []
    with MediaCopier(out, roots=run_roots(run.path, media_roots=media_roots)) as copier:
        for result in results:
            rows.append(_task_page(run, result, copier, out, title))
    summary = summarize(results)
    body = run_body(title, summary, rows, config=config, analysis=_analysis(run))
    write_atomic(out / "index.html", page(title, body), sync=False)
    data = out / "data"
    data.mkdir(exist_ok=True)
    write_atomic(data / "summary.json", summary.model_dump_json(indent=1), sync=False)
    table = [
        {
            "task_id": r.result.task_id,
            "sample": r.result.sample,
            "state": r.state,
            "level": r.result.metadata.level,
            "category": r.result.metadata.category,
            "answer": r.answer,
            "turns": r.turns,
            "tool_calls": r.result.tool_call_count,
            "tokens": r.tokens,
            "wall_s": r.result.wall_s,
            "page": r.page,
        }
        for r in rows
    ]
    write_atomic(data / "tasks.json", json.dumps(table, ensure_ascii=False), sync=False)
    return RunReport(
        label=title,
        folder=out,
        summary=summary,
        rows=rows,
        agent=config.agent if config is not None else "",
        model=config.model if config is not None else "",
    )


def _task_page(
    run: RunDir, result: TaskResult, copier: MediaCopier, out: Path, title: str
) -> TaskRow:
    """Write the page of one task (when its trajectory is readable); its table row."""
    file = run.trajectory_file(result.task_id, result.sample)
    trajectory = _trajectory(file) if file.is_file() else None
    row = TaskRow.of(result, trajectory)
    if trajectory is not None:
        search = (file.with_suffix(".media"), run.workspace(result.task_id, result.sample))
        render = Renderer(copier, root="../", search=search)
        body = (
            f'<nav><a href="../index.html">← {esc(title)}</a></nav>'
            f"<h1>{esc(row.label)}</h1>{trajectory_body(trajectory, render, result=result)}"
        )
        row.page = f"tasks/{row.stem}.html"
        write_atomic(out / row.page, page(f"{row.label} · {title}", body, root="../"), sync=False)
    return row


def build_report(runs: Sequence[Path], out: Path, *, media_roots: Sequence[Path] = ()) -> Path:
    """A report of ``runs`` in ``out``; returns its ``index.html``. One run: that run's report.
    Several: each run's report in ``out/runs/<n>-<name>/`` and an index comparing each run
    with the first (paired results, McNemar's test, per-group deltas)."""
    if not runs:
        raise BenchError("give at least one run folder")
    for path in runs:
        if not Path(path).is_dir():
            raise BenchError(f"{path} is not a folder; give run folders (omnilab eval --out)")
    add_private_paths(out, *runs)  # hidden from any sandbox this process starts later
    for path in runs:  # maybe another user's: its files are read through no link, no FIFO
        _wsread.mark_untrusted(Path(path))
    if len(runs) == 1:
        write_run_report(Path(runs[0]), out, media_roots=media_roots)
        return out / "index.html"
    reports = []
    for n, path in enumerate(runs, start=1):
        folder = out / "runs" / f"{n}-{file_stem(Path(path).name)}"
        reports.append(
            write_run_report(Path(path), folder, label=Path(path).name, media_roots=media_roots)
        )
    write_assets(out)
    body = comparison_body(reports, out)
    write_atomic(out / "index.html", page("Run comparison", body), sync=False)
    return out / "index.html"


def write_trajectory_page(path: Path, out: Path, *, media_roots: Sequence[Path] = ()) -> Path:
    """One trajectory file as ``out/<name>.html`` (media copied to ``out/media`` from beneath
    its run folder, the media cache and ``media_roots`` only); returns it."""
    trajectory = read_trajectory(path)
    out.mkdir(parents=True, exist_ok=True)
    write_assets(out)
    start = trajectory.run_start
    title = (start.task_id if start is not None else None) or path.stem
    # Media are copied only from beneath the trajectory's run folder (an eval run's, for a
    # file in its trajectories/ folder).
    folder = path.parent.parent if path.parent.name == "trajectories" else path.parent
    with MediaCopier(out, roots=run_roots(folder, media_roots=media_roots)) as copier:
        render = Renderer(copier, search=(path.with_suffix(".media"),))
        body = f"<h1>{esc(title)}</h1>{trajectory_body(trajectory, render)}"
    target = out / f"{path.stem}.html"
    write_atomic(target, page(title, body), sync=False)
    return target
