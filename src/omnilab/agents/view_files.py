"""The image files a view shows the model, written into the task's workspace by rules sandboxed
code cannot subvert (:func:`save_view`), and video frames as parts that point at them."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from omnilab import _wsread
from omnilab.content import Content, Image, Text

if TYPE_CHECKING:
    from PIL import Image as PILImage

    from omnilab.media.prepared import JpegFrame

__all__ = ["frame_parts", "place_view", "save_view"]


def frame_parts(file_id: str, shots: Sequence[JpegFrame], views: Path, head: str) -> list[Content]:
    """``head``, then each frame (a prepared JPEG from the media cache) copied into ``views``
    after a ``t=... s`` line (the run folder keeps them when the cache evicts its entries)."""
    parts: list[Content] = [Text(text=head)]
    for shot in shots:
        # The cache entry is the harness's own file; the copy goes in by place_view's rules.
        name = f"{file_id}_t{shot.timestamp:.3f}.jpg"
        out = place_view(_wsread.read_bytes(shot.path), views, name)
        parts += [Text(text=f"t={shot.timestamp:.2f} s"), Image(path=out, mime_type="image/jpeg")]
    return parts


def save_view(image: PILImage.Image, views: Path, name: str, *, quality: int = 75) -> Path:
    """Saves ``image`` as JPEG ``views/name`` and returns its path.

    ``views`` is in the task's workspace, which sandboxed code can write: the file is written
    beside its target and renamed over it (a link planted there is replaced, never followed),
    and the workspace is marked untrusted so every later read of the view (the provider
    adapter re-reads it for each model call) goes through :mod:`omnilab._wsread`.
    """
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="JPEG", quality=quality)
    return place_view(buf.getvalue(), views, name)


def place_view(data: bytes, views: Path, name: str) -> Path:
    """Writes ``data`` as ``views/name`` by :func:`save_view`'s rules and returns its path."""
    from omnilab.sandbox import place_bytes

    workspace = views.parent
    _wsread.mark_untrusted(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    place_bytes(workspace, (views.name,), name, data)
    return views / name
