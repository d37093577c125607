"""``omnilab report RUN [RUN...]`` and ``omnilab view FILE``: static HTML pages to open from disk."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnilab.bench.errors import BenchError
from omnilab.report import build_report, write_trajectory_page

__all__ = ["report", "view"]

MediaRootsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--media-root",
        help="A folder whose files the pages may show (the dataset's media); repeatable. "
        "Without it only files beneath the run folder and the media cache are copied: a "
        "trajectory naming any other file gets a placeholder.",
    ),
]


def report(
    runs: Annotated[
        list[Path] | None,
        typer.Argument(help="Run folders (omnilab eval --out). Two or more are compared."),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder to write the report into.")
    ] = Path("report"),
    serve: Annotated[
        Path | None,
        typer.Option(
            "--serve",
            help="Serve the reports of every run in this folder on 127.0.0.1 instead; a run "
            "still in progress is rebuilt when its page is reloaded.",
        ),
    ] = None,
    port: Annotated[int, typer.Option("--port", help="Port for --serve.")] = 8765,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            help="With --serve: environment variable holding the bearer token (default: a "
            "random one, kept in a 0600 file while serving).",
        ),
    ] = None,
    media_root: MediaRootsOpt = None,
) -> None:
    """Write an HTML report of runs: summary with 95% CIs, charts, a task table that sorts and
    filters, and one page per task with its trajectory (frames, audio, judge verdicts).

    With two or more runs the index compares each run with the first: paired results,
    McNemar's test, per-group deltas and links to both trajectories of each task. The report
    needs no network: open OUT/index.html in a browser. ``--serve RUNS_DIR`` serves the
    reports of every run in a folder on 127.0.0.1 instead, rebuilt as runs progress, behind the
    same guard as omnilab serve: a token (a browser signs in at the printed /login address),
    loopback Host names only, no cross-site requests; run folders are read without following
    links.
    """
    if serve is not None:
        if runs:
            raise BenchError("give run folders or --serve RUNS_DIR, not both")
        from omnilab.cli.report_serve import serve_reports

        serve_reports(serve, port=port, token_env=token_env)
        return
    if token_env is not None:
        raise BenchError("--token-env applies to --serve only")
    if not runs:
        raise BenchError("give at least one run folder (or --serve RUNS_DIR)")
    index = build_report(runs, out, media_roots=media_root or ())
    typer.echo(str(index))


def view(
    file: Annotated[
        Path, typer.Argument(help="A trajectory file (.jsonl), e.g. from omnilab ask.")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder for the page (default: beside the file)."),
    ] = None,
    media_root: MediaRootsOpt = None,
) -> None:
    """Render one trajectory as an HTML page (frames, audio, tool calls) and print its path."""
    target = out if out is not None else file.with_name(f"{file.stem}.view")
    typer.echo(str(write_trajectory_page(file, target, media_roots=media_root or ())))
