"""``omnilab demo``: the main job on embedded defaults (for now: a media-environment tour).

Everything it shows is made on the spot from :mod:`omnilab.media.synth`, so it runs offline,
from any folder, with nothing downloaded. It drives the same commands a user would type, so the
demo cannot drift from the real CLI.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from omnilab.cli import media
from omnilab.errors import OmnilabError
from omnilab.media import synth

__all__ = ["demo"]

# Long enough for frames, a clip and a sheet to show change over time; small enough to stay fast.
_SECONDS = 8.0
_SIZE = (640, 360)
_SEGMENT = (2.0, 5.0)
_FRAME_EDGE = 320
# The top third of every synthetic frame holds the index blocks: a natural thing to crop.
_CROP_BOX = f"0,0,{_FRAME_EDGE},{_FRAME_EDGE * _SIZE[1] // _SIZE[0] // 3}"


def demo(
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder for the sample video and everything cut from it."),
    ] = Path("omnilab-demo"),
) -> None:
    """Tour the media tools on a sample video made on the spot (offline, a few seconds).

    Makes an 8-second video, probes it, then cuts frames, audio, a clip, a crop and a sheet.

    Everything goes into --out; the paths are listed at the end.
    """
    began = time.monotonic()
    console = Console(highlight=False, soft_wrap=True)
    folder = out.expanduser()
    if folder.exists() and not folder.is_dir():
        raise OmnilabError(f"--out {folder} is a file; the demo needs a folder")
    folder.mkdir(parents=True, exist_ok=True)
    start, end = _SEGMENT

    console.print(Rule("sample video"))
    video = synth.make_video(
        folder / "sample.mp4", duration=_SECONDS, size=_SIZE, text="omnilab demo"
    )
    console.print(
        f"made {video}: frames show their index as blocks, each second plays its own tone"
    )
    console.print(Rule("omnilab media probe"))
    media.probe(video)
    console.print(Rule("omnilab media frames"))
    frames = media.frames_cmd(video, out=folder / "frames", num=8, max_edge=_FRAME_EDGE)
    console.print(Rule("omnilab media audio"))
    media.audio_cmd(video, out=folder / "audio.wav", start=start, end=end)
    console.print(Rule("omnilab media clip"))
    media.clip_cmd(video, out=folder / "clip.mp4", start=start, end=end)
    console.print(Rule("omnilab media crop"))
    media.crop_cmd(frames[0], box=_CROP_BOX, out=folder / "crop.png")
    console.print(Rule("omnilab media sheet"))
    media.sheet_cmd(video, out=folder / "sheet.jpg", num=16, tile_edge=320)

    console.print(Rule(f"done in {time.monotonic() - began:.1f} s"))
    table = Table("output", show_edge=False)
    table.add_column("path", overflow="fold")
    for name in ("sample.mp4", "frames", "audio.wav", "clip.mp4", "crop.png", "sheet.jpg"):
        table.add_row(name, str(folder.resolve() / name))
    console.print(table)
