"""``omnilab media ...``: inspect and cut media files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from omnilab.media import probe as probe_file

__all__ = ["app"]

app = typer.Typer(
    help="Inspect and cut media files (probe, frames, audio, clips, crops, sheets).",
    no_args_is_help=True,
)


@app.command("probe")
def probe(
    file: Annotated[Path, typer.Argument(help="A video, audio or image file.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the metadata as JSON.")] = False,
) -> None:
    """Show what FILE is: kind, container, duration, streams, size and codecs."""
    info = probe_file(file)
    if json_out:
        typer.echo(info.model_dump_json(indent=2))
        return
    console = Console()
    console.print(info.summary(), highlight=False)
    table = Table(show_header=False, box=None, padding=(0, 2))
    for key, value in info.model_dump(exclude_none=True).items():
        table.add_row(key, str(value))
    console.print(table)
