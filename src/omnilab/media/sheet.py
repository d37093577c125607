"""Contact sheets: many frames on one labelled grid, the cheapest way to show a model a video.

A sheet is ``columns x rows`` cells of equal size separated (and framed) by :data:`GAP` pixels of
dark background. Each frame is shrunk to fit a ``tile_edge`` square (aspect kept, never enlarged)
and centred in its cell; its timestamp is printed in a dark box in the tile's bottom-left corner
(bottom, because the top of a frame more often holds what a model is asked about: titles,
scoreboards, faces).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from omnilab.config import get_settings
from omnilab.media._validate import check_count, check_time_range, require_video
from omnilab.media.image import resize
from omnilab.media.probe import probe
from omnilab.media.video import Frame, frames_at

__all__ = ["GAP", "contact_sheet", "format_timestamp", "sheet_times", "video_sheet"]

GAP = 4
"""Pixels between cells and around the grid."""

_BACKGROUND = (16, 16, 16)
_LABEL_BOX = (0, 0, 0)
_LABEL_TEXT = (255, 255, 255)
# Labels stay legible on small tiles and do not swamp large ones.
_MIN_FONT_PX = 12
_FONT_FRACTION = 10


def format_timestamp(seconds: float) -> str:
    """``83.42`` -> ``"01:23.4"``; hours appear only when needed (``"1:02:03.0"``)."""
    tenths = round(max(0.0, seconds) * 10)
    minutes, tenth_s = divmod(tenths, 600)
    hours, minutes = divmod(minutes, 60)
    sec = f"{tenth_s // 10:02d}.{tenth_s % 10}"
    return f"{hours}:{minutes:02d}:{sec}" if hours else f"{minutes:02d}:{sec}"


def contact_sheet(
    frames: Sequence[Frame], *, columns: int | None = None, tile_edge: int = 320
) -> Image.Image:
    """Lay ``frames`` out in reading order on a grid, each labelled with its timestamp.

    Args:
        frames: The frames to show (at least one), e.g. from :func:`omnilab.media.video.frames`.
        columns: Cells per row; default ``ceil(sqrt(len(frames)))`` (a near-square sheet).
        tile_edge: Longest edge of each tile in pixels; frames larger than that are shrunk.

    Returns:
        An RGB image of ``columns * cell_w + (columns + 1) * GAP`` by
        ``rows * cell_h + (rows + 1) * GAP`` pixels, where the cell is the largest tile.
    """
    if not frames:
        raise ValueError("contact_sheet needs at least one frame")
    if tile_edge < 1:
        raise ValueError(f"tile_edge must be positive (got {tile_edge})")
    n = len(frames)
    cols = math.ceil(math.sqrt(n)) if columns is None else columns
    if cols < 1:
        raise ValueError(f"columns must be positive (got {columns})")
    cols = min(cols, n)
    rows = math.ceil(n / cols)
    tiles = [resize(f.image.convert("RGB"), tile_edge) for f in frames]
    cell_w = max(t.width for t in tiles)
    cell_h = max(t.height for t in tiles)
    sheet = Image.new(
        "RGB", (cols * cell_w + (cols + 1) * GAP, rows * cell_h + (rows + 1) * GAP), _BACKGROUND
    )
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=max(_MIN_FONT_PX, cell_h // _FONT_FRACTION))
    for i, (frame, tile) in enumerate(zip(frames, tiles, strict=True)):
        row, col = divmod(i, cols)
        x0 = GAP + col * (cell_w + GAP)
        y0 = GAP + row * (cell_h + GAP)
        tx, ty = x0 + (cell_w - tile.width) // 2, y0 + (cell_h - tile.height) // 2
        sheet.paste(tile, (tx, ty))
        _label(draw, font, format_timestamp(frame.timestamp), tx, ty + tile.height)
    return sheet


def _label(
    draw: ImageDraw.ImageDraw,
    font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
    text: str,
    x: int,
    bottom: int,
) -> None:
    left, top, right, low = draw.textbbox((0, 0), text, font=font)
    pad = max(2, (low - top) // 4)
    box_h = (low - top) + 2 * pad
    box = (x, bottom - box_h, x + (right - left) + 2 * pad, bottom)
    draw.rectangle(box, fill=_LABEL_BOX)
    # textbbox is relative to the anchor, so the offsets undo the font's internal leading.
    draw.text((x + pad - left, bottom - box_h + pad - top), text, font=font, fill=_LABEL_TEXT)


def sheet_times(duration: float, num: int) -> list[float]:
    """The centres of ``num`` equal spans of ``[0, duration]``.

    Centres rather than ends: the very first and last frames of real videos are often black
    fades or a logo, and the last timestamp would sit on the end of the stream.
    """
    if num < 1:
        raise ValueError(f"num must be positive (got {num})")
    span = duration / num
    return [(i + 0.5) * span for i in range(num)]


def video_sheet(
    path: str | Path, num: int = 16, *, tile_edge: int = 320, columns: int | None = None
) -> Image.Image:
    """A contact sheet of ``num`` frames taken at the centres of equal spans of the video.

    Raises :class:`~omnilab.media.errors.MediaError` for files that are not readable video and
    for ``num`` above the ``media.max_frames`` setting.
    """
    info = probe(path)
    require_video(info)
    check_count(num, get_settings().media.max_frames)
    start, end = check_time_range(info, 0.0, None)
    times = [start + t for t in sheet_times(end - start, num)]
    return contact_sheet(
        frames_at(info.path, times, max_edge=tile_edge), columns=columns, tile_edge=tile_edge
    )
