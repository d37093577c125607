"""Keyframes of a video result: a few frames of the matching passage, laid out as one picture.

Omni-DeepSearch's ``video_search`` is "Search for videos and keyframes" (Appendix D), and its
annotators checked a candidate video on "a small number of keyframes (e.g., 16 frames) for rapid
verification" (§3.2). A result of a local video index points at its source file and passage, so
:func:`keyframe_sheet` can take ``num`` frames spread over that passage and lay them out as a
labelled contact sheet (one image, so a vision model sees them in order at the cost of one
picture). Remote providers give only the provider's own thumbnail: omnilab never downloads a
result's video.

Sheets are cached by source file (path, size, mtime), passage and count; a video that can no
longer be read gives ``None``, and the caller keeps the index's poster frame.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from omnilab.config import get_settings

__all__ = ["KEYFRAME_EDGE", "keyframe_sheet"]

KEYFRAME_EDGE = 256
"""Longest edge of each keyframe in the sheet, in pixels (16 of them make a ~1 k picture)."""


def _cache_path(video: Path, start: float, end: float, num: int) -> Path | None:
    try:
        stat = video.stat()
    except OSError:
        return None
    key = f"{video.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{start:.3f}|{end:.3f}|{num}"
    digest = hashlib.sha256(key.encode()).hexdigest()
    return get_settings().cache_dir / "mediasearch" / "keyframes" / digest[:2] / f"{digest}.jpg"


def keyframe_sheet(video: Path, start: float, end: float, num: int) -> Path | None:
    """A JPEG contact sheet of ``num`` frames at the centres of equal spans of
    ``[start, end]`` seconds of ``video`` (cached); ``None`` when the video cannot be read."""
    from omnilab.media.errors import MediaError
    from omnilab.media.probe import probe
    from omnilab.media.sheet import contact_sheet, sheet_times
    from omnilab.media.video import frames_at

    out = _cache_path(video, start, end, num)
    if out is None:
        return None
    if out.is_file():
        return out
    try:
        duration = float(probe(video).duration or 0.0)
        last = max(duration - 0.05, 0.0)
        begin = min(max(start, 0.0), last)
        stop = min(max(end, begin), last) if end > 0 else last
        times = [min(begin + t, last) for t in sheet_times(max(stop - begin, 0.0), num)]
        frames = frames_at(video, times, max_edge=KEYFRAME_EDGE)
    except MediaError:
        return None
    sheet = contact_sheet(frames, tile_edge=KEYFRAME_EDGE)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    sheet.save(tmp, format="JPEG", quality=85)
    tmp.replace(out)
    return out
