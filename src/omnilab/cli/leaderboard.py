"""``omnilab leaderboard RUN...``: one table of models x benchmark groups with 95% intervals,
written as Markdown, CSV and LaTeX. Imports the harness only when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["leaderboard"]


def leaderboard(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folders (or results .jsonl files), any number, any benchmarks.",
            metavar="RUN...",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Where to write: OUT.md, OUT.csv and OUT.tex are written."
        ),
    ] = Path("leaderboard"),
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Groupings for the columns, comma-separated (default: each benchmark's first: "
            "Level for OmniGAIA, retrieval modality for Omni-DeepSearch; OmniAgent's question "
            "types are columns already).",
        ),
    ] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", min=100, help="Bootstrap resamples per cell.")
    ] = 10_000,
) -> None:
    """Models x benchmark groups over several runs, each cell with its 95% bootstrap interval."""
    from omnilab.bench.leaderboard import build_leaderboard, to_markdown, write_leaderboard
    from omnilab.cli._console import inert_console

    groups = [g.strip() for g in by.split(",") if g.strip()] if by is not None else None
    board = build_leaderboard(runs, groups=groups, resamples=resamples)
    written = write_leaderboard(board, out)
    console = inert_console(highlight=False, soft_wrap=True)
    console.print(to_markdown(board), markup=False)
    console.print("written: " + ", ".join(str(p) for p in written), markup=False)
