"""Still images: load with EXIF orientation applied, crop with a validated box, resize."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageOps

from omnilab.media._open import check_file, open_bytes
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.probe import MediaKind, probe

__all__ = ["crop", "load_image", "resize"]


def load_image(path: str | Path) -> Image.Image:
    """Load an image file as RGB, turned upright as its EXIF orientation says."""
    p = check_file(path)
    info = probe(p)
    if info.kind is not MediaKind.IMAGE:
        raise MediaError(
            MediaErrorCode.UNSUPPORTED,
            f"{p.name} is a {info.kind.value} file, not an image",
            path=p,
        )
    try:
        with open_bytes(p) as f, Image.open(f) as im:
            upright = ImageOps.exif_transpose(im)
            return upright.convert("RGB")
    except (OSError, ValueError) as e:
        raise MediaError(
            MediaErrorCode.CORRUPT, f"{p.name} cannot be decoded as an image ({e})", path=p
        ) from e


def resize(image: Image.Image, max_edge: int | None) -> Image.Image:
    """Shrink so the longest edge is at most ``max_edge``, keeping aspect; never enlarges."""
    if max_edge is None or max(image.size) <= max_edge:
        return image
    if max_edge < 1:
        raise ValueError(f"max_edge must be positive (got {max_edge})")
    w, h = image.size
    scale = max_edge / max(w, h)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def crop(image: Image.Image, box: Sequence[float], *, name: str = "image") -> Image.Image:
    """Cut ``box = [left, top, right, bottom]`` (pixels, right/bottom exclusive) out of ``image``.

    Fractional coordinates are rounded to whole pixels. The box must lie inside the image and have
    positive area; every message names ``name`` and its size so the caller can fix the box.
    """
    w, h = image.size
    where = f"{name} ({w}x{h}: left/right in 0..{w}, top/bottom in 0..{h})"
    if len(box) != 4:
        raise MediaError(
            MediaErrorCode.INVALID_BOX,
            f"crop box must have 4 numbers [left, top, right, bottom] (got {len(box)}) for {where}",
        )
    values = [float(v) for v in box]
    if not all(math.isfinite(v) for v in values):
        raise MediaError(
            MediaErrorCode.INVALID_BOX,
            f"crop box {values} must hold finite numbers for {where}",
        )
    left, top, right, bottom = (round(v) for v in values)
    shown = f"[{left}, {top}, {right}, {bottom}]"
    if right <= left or bottom <= top:
        raise MediaError(
            MediaErrorCode.INVALID_BOX,
            f"crop box {shown} has no area (right must exceed left, bottom must exceed top) in {where}",
        )
    if left < 0 or top < 0 or right > w or bottom > h:
        raise MediaError(MediaErrorCode.INVALID_BOX, f"crop box {shown} is outside {where}")
    return image.crop((left, top, right, bottom))
