"""Media parts as a model receives them, prepared once and reused from the media cache.

Sampled frames encoded as JPEG (the form every frame view and the OpenAI-compatible transport
send) and images cut and shrunk to a model's size (PNG) are content-addressed like every
cache entry: by the source's content identity and the parameters that change the bytes. Turns
of a task, ``--samples K``, tasks that share a file and later runs then read the files instead
of decoding the video again; a set being produced is locked across processes, so tasks that
ask for the same frames at the same time decode them once.

The bytes are the ones :func:`~omnilab.media.video.frames` plus Pillow's JPEG encoder at
quality 90 give (what was sent before the cache existed), so a cached part is exactly what a
fresh one would be.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from omnilab import _wsread
from omnilab.media.cache import MediaCache

if TYPE_CHECKING:
    from omnilab.media.video import Frame

__all__ = ["JpegFrame", "fitted_png", "jpeg_frames", "jpeg_frames_at"]

# Bump when the bytes produced for the same parameters change, so old entries are not hit.
_VERSION = 1
_JPEG_QUALITY = 90
# Pictures a decoder keeps for reference and reordering, per decoding worker (H.264 allows 16),
# and the most decoding workers one request uses (``omnilab.media._plan._MAX_WORKERS``).
_DECODER_PICTURES = 16
_DECODING_WORKERS = 4


@dataclass(frozen=True)
class JpegFrame:
    """One sampled frame as a JPEG file in the media cache (see :class:`~omnilab.media.Frame`)."""

    path: Path
    timestamp: float
    requested: float
    keyframe: bool


def jpeg_frames(
    path: str | Path,
    start: float = 0.0,
    end: float | None = None,
    num: int = 8,
    *,
    max_edge: int | None = None,
    keyframes_only: bool = False,
    cache: MediaCache | None = None,
) -> list[JpegFrame]:
    """:func:`~omnilab.media.video.frames` with the same arguments, as cached JPEG files."""
    from omnilab.media.video import frames

    params = {"start": start, "end": end, "num": num}
    return _frame_set(
        Path(path),
        "jpeg_frames",
        params,
        num,
        max_edge,
        keyframes_only,
        cache,
        lambda edge: frames(path, start, end, num, max_edge=edge, keyframes_only=keyframes_only),
    )


def jpeg_frames_at(
    path: str | Path,
    timestamps: Sequence[float],
    *,
    max_edge: int | None = None,
    keyframes_only: bool = False,
    cache: MediaCache | None = None,
) -> list[JpegFrame]:
    """:func:`~omnilab.media.video.frames_at` with the same arguments, as cached JPEG files."""
    from omnilab.media.video import frames_at

    times = [float(t) for t in timestamps]
    return _frame_set(
        Path(path),
        "jpeg_frames_at",
        {"times": times},
        len(times),
        max_edge,
        keyframes_only,
        cache,
        lambda edge: frames_at(path, times, max_edge=edge, keyframes_only=keyframes_only),
    )


def _frame_set(
    path: Path,
    op: str,
    params: Mapping[str, object],
    num: int,
    max_edge: int | None,
    keyframes_only: bool,
    cache: MediaCache | None,
    decode: Callable[[int | None], Sequence[Frame]],
) -> list[JpegFrame]:
    from omnilab.config import get_settings
    from omnilab.media._validate import check_video_pixels
    from omnilab.media.budget import cores, media_budget
    from omnilab.media.probe import probe

    # Validates the file first (a missing or broken one raises before any cache lookup).
    info = probe(path)
    if info.has_video:
        check_video_pixels(info)  # before the memory for its pictures is reserved
    edge = get_settings().media.max_edge if max_edge is None else max_edge
    store = cache if cache is not None else MediaCache.default()
    full = {**params, "edge": edge, "keyframes": keyframes_only, "q": _JPEG_QUALITY}
    key = store.key(info.path, op, {**full, "v": _VERSION})
    found = _read_set(store, key)
    if found is not None:
        return found
    with store.lock(key):
        found = _read_set(store, key)  # another task or process made it meanwhile
        if found is not None:
            return found
        width, height = info.width or 1920, info.height or 1080
        scale = min(1.0, edge / max(width, height)) if edge else 1.0
        kept = num * int(width * scale) * int(height * scale) * 4
        decoding = _DECODING_WORKERS * _DECODER_PICTURES * width * height * 3 // 2
        with media_budget().reserve(kept + decoding):
            shots = decode(max_edge)
            # Pillow releases the GIL while it encodes: the JPEGs are made on every core.
            with ThreadPoolExecutor(cores(), thread_name_prefix="omnilab-jpeg") as pool:
                made = list(pool.map(partial(_store_frame, store, key), range(len(shots)), shots))
            del shots
        manifest = [[f.timestamp, f.requested, f.keyframe] for f in made]
        store.put(key, ".json", json.dumps(manifest).encode())
    store.evict()
    return made


def _frame_key(key: str, index: int) -> str:
    return hashlib.sha256(f"{key}/{index}".encode()).hexdigest()


def _store_frame(store: MediaCache, key: str, index: int, shot: Frame) -> JpegFrame:
    buf = io.BytesIO()
    shot.image.convert("RGB").save(buf, format="JPEG", quality=_JPEG_QUALITY)
    out = store.put(_frame_key(key, index), ".jpg", buf.getvalue())
    return JpegFrame(out, shot.timestamp, shot.requested, shot.keyframe)


def _read_set(store: MediaCache, key: str) -> list[JpegFrame] | None:
    """The cached set for ``key``, or None when its manifest or any frame is missing."""
    manifest = store.get(key, ".json")
    if manifest is None:
        return None
    try:
        rows = json.loads(manifest.read_bytes())
    except (OSError, ValueError):
        return None
    made: list[JpegFrame] = []
    for i, (timestamp, requested, keyframe) in enumerate(rows):
        hit = store.get(_frame_key(key, i), ".jpg")
        if hit is None:
            return None  # evicted: the set is produced again
        made.append(JpegFrame(hit, float(timestamp), float(requested), bool(keyframe)))
    return made


def fitted_png(
    path: Path,
    box: tuple[float, float, float, float] | None,
    max_edge: int | None,
    *,
    name: str = "image",
    cache: MediaCache | None = None,
) -> Path:
    """The image at ``path`` cut to ``box`` and shrunk to ``max_edge``, as a cached PNG."""
    store = cache if cache is not None else MediaCache.default()
    params = {"box": box, "edge": max_edge, "v": _VERSION}

    def produce(dest: Path) -> None:
        from omnilab.media.image import crop, resize

        # Refused on its header when it has too many pixels (a decompression bomb).
        with _wsread.open_image(path, name=name) as opened:
            picture = opened.convert("RGB")
        if box is not None:
            picture = crop(picture, box, name=name)
        resize(picture, max_edge).save(dest, format="PNG")

    return store.get_or_create(store.key(path, "fitted_png", params), ".png", produce)
