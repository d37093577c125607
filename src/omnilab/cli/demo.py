"""``omnilab demo``: the main job on embedded defaults (for now: a media-environment tour)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["demo"]


def demo(
    out: Annotated[
        Path, typer.Option("--out", help="Folder for the sample media and outputs.")
    ] = Path("demo-out"),
) -> None:
    """Make a short sample video and show probe, frames, audio and a contact sheet."""
    typer.echo(f"demo not written yet (would write to {out})")
