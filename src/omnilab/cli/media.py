"""``omnilab media ...``: inspect and cut media files.

Each command parses its options, calls one library function and renders the result with rich.
Every mistake a user can make surfaces as an :class:`~omnilab.errors.OmnilabError`, which
``omnilab.cli.main`` prints as one line with exit status 1.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from omnilab.cli._console import inert_console
from omnilab.errors import OmnilabError
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.probe import probe as probe_file
from omnilab.terminal import inert_json

if TYPE_CHECKING:
    from PIL import Image

# Each command imports the media operation it runs (numpy, Pillow, encoders) in its body:
# `omnilab media probe` pays for none of them (see omnilab.cli.main).

__all__ = [
    "app",
    "audio_cmd",
    "clip_cmd",
    "crop_cmd",
    "frames_cmd",
    "parse_box",
    "probe",
    "sheet_cmd",
]

app = typer.Typer(
    help="Inspect and cut media files (probe, frames, audio, clips, crops, sheets).",
    no_args_is_help=True,
)

_JPEG_QUALITY = 90
# Image outputs are limited to formats every viewer and model API reads.
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")

StartOpt = Annotated[float, typer.Option("--start", help="Start time in seconds.")]
EndOpt = Annotated[
    float | None,
    typer.Option("--end", help="End time in seconds; default: the end of the file."),
]
MaxEdgeOpt = Annotated[
    int | None,
    typer.Option(
        "--max-edge",
        min=16,
        help="Shrink pictures so their longest edge is at most this many pixels (never enlarges).",
    ),
]


def _console() -> Console:
    return inert_console(highlight=False, soft_wrap=True)


@contextmanager
def _writing(path: Path) -> Iterator[None]:
    # Disk full, permissions, a file where a folder should be: one line, not a traceback.
    try:
        yield
    except OSError as e:
        raise OmnilabError(f"cannot write {path}: {e.strerror or e}") from e


def _output_file(path: Path, suffixes: Sequence[str], *, source: Path | None = None) -> Path:
    """Check an output file path before any work; the first suffix is the one suggested.

    Parent folders are created by the writers, only once the work has succeeded.
    """
    out = path.expanduser()
    if out.is_dir():
        raise OmnilabError(
            f"--out {out} is a folder; give a file name such as {out / ('out' + suffixes[0])}"
        )
    if out.suffix.lower() not in suffixes:
        raise OmnilabError(
            f"--out {out} must end in {', '.join(suffixes)} (the suffix decides the file format)"
        )
    if source is not None and source.exists() and out.resolve() == source.resolve():
        raise OmnilabError(f"--out {out} is the input file; choose another name")
    return out


def _save_image(image: Image.Image, out: Path) -> None:
    with _writing(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        image.save(out, quality=_JPEG_QUALITY)


def parse_box(text: str) -> tuple[float, float, float, float]:
    """``"10,20,200,120"`` -> ``(10.0, 20.0, 200.0, 120.0)``; anything else is ``INVALID_BOX``."""
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 4 or len(parts) != 4:
        raise MediaError(
            MediaErrorCode.INVALID_BOX,
            f"--box must be four pixel numbers left,top,right,bottom such as 10,20,200,120 (got {text!r})",
        )
    left, top, right, bottom = values
    return left, top, right, bottom


def _parse_times(text: str) -> list[float]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise MediaError(
            MediaErrorCode.INVALID_RANGE,
            f"--at must be seconds separated by commas such as 1.5,3,10 (got {text!r})",
        ) from None


@app.command("probe")
def probe(
    file: Annotated[Path, typer.Argument(help="A video, audio or image file.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the metadata as JSON.")] = False,
) -> None:
    """Show what FILE is: kind, container, duration, streams, size and codecs."""
    info = probe_file(file)
    if json_out:
        typer.echo(inert_json(info.model_dump_json(indent=2)))
        return
    console = _console()
    console.print(info.summary())
    table = Table(show_header=False, box=None, padding=(0, 2))
    for key, value in info.model_dump(exclude_none=True).items():
        table.add_row(key, str(value))
    console.print(table)


@app.command("frames")
def frames_cmd(
    file: Annotated[Path, typer.Argument(help="A video file.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for the JPEG files (created if missing).",
            show_default=False,
        ),
    ],
    start: StartOpt = 0.0,
    end: EndOpt = None,
    num: Annotated[
        int, typer.Option("--num", "-n", help="How many frames, evenly spaced, both ends included.")
    ] = 8,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="Exact times instead of a range, e.g. 1.5,3,10 (ignores --start/--end/--num).",
        ),
    ] = None,
    max_edge: MaxEdgeOpt = None,
    keyframes_only: Annotated[
        bool,
        typer.Option(
            "--keyframes-only",
            help="Take the keyframe at or before each time: much faster, up to one GOP early.",
        ),
    ] = False,
) -> list[Path]:
    """Save frames of FILE as JPEGs named NNN_<seconds>s.jpg and list requested vs actual times.

    The frame for a time t is the one a player shows at t (the last frame starting at or before t).
    """
    folder = out.expanduser()
    if folder.exists() and not folder.is_dir():
        raise OmnilabError(f"--out {folder} is a file; frames need a folder")
    from omnilab.media.video import frames as frames_between
    from omnilab.media.video import frames_at

    if at is not None:
        picked = frames_at(file, _parse_times(at), max_edge=max_edge, keyframes_only=keyframes_only)
    else:
        picked = frames_between(
            file, start, end, num, max_edge=max_edge, keyframes_only=keyframes_only
        )
    # The folder is made only once the request has succeeded, so a typo leaves nothing behind.
    with _writing(folder):
        folder.mkdir(parents=True, exist_ok=True)
    table = Table("#", "requested", "actual", "key")
    table.add_column("file", overflow="fold")
    written = [folder / f"{i:03d}_{f.timestamp:.3f}s.jpg" for i, f in enumerate(picked)]
    # JPEG encoding releases the GIL: on several cores the files are written side by side
    # (encoding costs about as much as decoding the frames).
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        list(pool.map(_save_image, [f.image for f in picked], written))
    for i, (frame, path) in enumerate(zip(picked, written, strict=True)):
        key = "yes" if frame.keyframe else ""
        table.add_row(str(i), f"{frame.requested:.3f}", f"{frame.timestamp:.3f}", key, path.name)
    console = _console()
    console.print(f"{len(picked)} frames of {file.name} in {folder}")
    console.print(table)
    return written


@app.command("audio")
def audio_cmd(
    file: Annotated[Path, typer.Argument(help="An audio file or a video with sound.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The WAV file to write.", show_default=False)
    ],
    start: StartOpt = 0.0,
    end: EndOpt = None,
) -> Path:
    """Cut [--start, --end) of FILE's sound to a mono 16-bit WAV.

    The sample rate is the media.audio_sample_rate setting (16 kHz unless changed).
    """
    from omnilab.media.audio import audio_segment

    dest = _output_file(out, (".wav",), source=file)
    with _writing(dest):
        written = audio_segment(file, start, end, out=dest)
    _console().print(f"wrote {written}\n  {probe_file(written).summary()}")
    return written


@app.command("clip")
def clip_cmd(
    file: Annotated[Path, typer.Argument(help="A video or audio file.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The MP4 file to write.", show_default=False)
    ],
    start: StartOpt = 0.0,
    end: EndOpt = None,
    max_edge: MaxEdgeOpt = None,
) -> Path:
    """Cut [--start, --end) of FILE to an MP4 (H.264 video, AAC sound) that plays anywhere.

    The clip starts at the frame nearest --start and is re-encoded, so cuts are frame-exact.

    Clips longer than the media.max_clip_seconds setting (600 s by default) are refused.
    """
    from omnilab.media.clips import clip as clip_file

    dest = _output_file(out, (".mp4",), source=file)
    # clip() takes an explicit end; "to the end" is a CLI convenience, resolved from the probe.
    stop = end if end is not None else probe_file(file).duration
    if stop is None:
        raise OmnilabError(f"the duration of {file.name} is unknown; give --end")
    with _writing(dest):
        written = clip_file(file, start, stop, out=dest, max_edge=max_edge)
    _console().print(f"wrote {written}\n  {probe_file(written).summary()}")
    return written


@app.command("crop")
def crop_cmd(
    image: Annotated[
        Path, typer.Argument(help="An image file (EXIF orientation is applied first).")
    ],
    box: Annotated[
        str,
        typer.Option(
            "--box",
            help="Pixels left,top,right,bottom of the upright image; right and bottom excluded.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Image file to write (.jpg, .png or .webp).", show_default=False
        ),
    ],
) -> Path:
    """Cut a box out of IMAGE and save it."""
    from omnilab.media.image import crop as crop_image
    from omnilab.media.image import load_image

    numbers = parse_box(box)
    dest = _output_file(out, _IMAGE_SUFFIXES, source=image)
    cut = crop_image(load_image(image), numbers, name=image.name)
    _save_image(cut, dest)
    _console().print(f"wrote {dest}: {cut.width}x{cut.height} from {image.name}")
    return dest


@app.command("sheet")
def sheet_cmd(
    file: Annotated[Path, typer.Argument(help="A video file.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Image file to write (.jpg, .png or .webp).", show_default=False
        ),
    ],
    num: Annotated[int, typer.Option("--num", "-n", help="How many frames on the sheet.")] = 16,
    columns: Annotated[
        int | None,
        typer.Option("--columns", min=1, help="Frames per row; default: a near-square grid."),
    ] = None,
    tile_edge: Annotated[
        int, typer.Option("--tile-edge", min=16, help="Longest edge of each frame in pixels.")
    ] = 320,
) -> Path:
    """Save a contact sheet of FILE: a grid of frames, each labelled with its time.

    Frames come from the centres of NUM equal spans, never the often black first/last frames.

    The cheapest way to show a whole video to a person or a model.
    """
    from omnilab.media.sheet import video_sheet

    dest = _output_file(out, _IMAGE_SUFFIXES, source=file)
    sheet = video_sheet(file, num, tile_edge=tile_edge, columns=columns)
    _save_image(sheet, dest)
    _console().print(f"wrote {dest}: {num} frames, {sheet.width}x{sheet.height}")
    return dest
