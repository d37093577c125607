"""``omnilab report RUN [RUN...]`` and ``omnilab view FILE``: static HTML pages to open from disk."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnilab.report import build_report, write_trajectory_page

__all__ = ["report", "view"]


def report(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run folders (omnilab eval --out). Two or more are compared."),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder to write the report into.")
    ] = Path("report"),
) -> None:
    """Write an HTML report of runs: summary with 95% CIs, charts, a task table that sorts and
    filters, and one page per task with its trajectory (frames, audio, judge verdicts).

    With two or more runs the index compares each run with the first: paired results,
    McNemar's test, per-group deltas and links to both trajectories of each task. The report
    needs no network: open OUT/index.html in a browser.
    """
    index = build_report(runs, out)
    typer.echo(str(index))


def view(
    file: Annotated[
        Path, typer.Argument(help="A trajectory file (.jsonl), e.g. from omnilab ask.")
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Folder for the page (default: beside the file)."),
    ] = None,
) -> None:
    """Render one trajectory as an HTML page (frames, audio, tool calls) and print its path."""
    target = out if out is not None else file.with_name(f"{file.stem}.view")
    typer.echo(str(write_trajectory_page(file, target)))
