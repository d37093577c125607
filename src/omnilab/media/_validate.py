"""Request validation shared by every media operation, so all of them word errors alike."""

from __future__ import annotations

import math

from omnilab._wsread import MAX_PIXELS
from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.probe import MediaInfo, MediaKind

__all__ = [
    "check_count",
    "check_time",
    "check_time_range",
    "check_video_pixels",
    "end_tolerance",
    "require_audio",
    "require_video",
]


def end_tolerance(info: MediaInfo) -> float:
    """How far past the probed duration a time may be and still mean 'the end'.

    Durations are rounded by containers and by users ("122.4" for 122.38 s); one frame plus 50 ms
    absorbs that without letting a real overrun through.
    """
    frame = 1.0 / info.fps if info.fps else 0.0
    return 0.05 + frame


def _duration(info: MediaInfo) -> float:
    if info.duration is None:
        raise MediaError(
            MediaErrorCode.CORRUPT,
            f"{info.path.name} has no known duration, so times cannot be checked",
            path=info.path,
        )
    return info.duration


def check_time(info: MediaInfo, t: float, *, name: str = "t") -> float:
    """Validate one timestamp; returns it clamped to ``[0, duration]``."""
    duration = _duration(info)
    if not math.isfinite(t):
        raise MediaError(
            MediaErrorCode.INVALID_RANGE,
            f"{name} must be a finite number of seconds (got {t})",
            path=info.path,
        )
    if t < 0:
        raise MediaError(
            MediaErrorCode.TS_OOB,
            f"{name} {fmt_s(t)} is before the start of {info.path.name} (valid: 0.0 s to {fmt_s(duration)})",
            path=info.path,
        )
    if t > duration + end_tolerance(info):
        raise MediaError(
            MediaErrorCode.TS_OOB,
            f"{name} {fmt_s(t)} is past the end of {info.path.name} (duration {fmt_s(duration)})",
            path=info.path,
        )
    return min(t, duration)


def check_time_range(
    info: MediaInfo,
    start: float,
    end: float | None,
    *,
    names: tuple[str, str] = ("start", "end"),
    allow_empty: bool = False,
    max_seconds: float | None = None,
    limit_setting: str = "",
) -> tuple[float, float]:
    """Validate ``[start, end]`` (``end=None`` means the end of the file); returns it clamped."""
    duration = _duration(info)
    start_name, end_name = names
    s = check_time(info, start, name=start_name)
    e = duration if end is None else check_time(info, end, name=end_name)
    if end is not None and end < start:
        raise MediaError(
            MediaErrorCode.INVALID_RANGE,
            f"{start_name} {fmt_s(start)} is after {end_name} {fmt_s(end)} (requested from {info.path.name})",
            path=info.path,
        )
    if not allow_empty and e - s <= 0:
        raise MediaError(
            MediaErrorCode.INVALID_RANGE,
            f"the range {fmt_s(s)} to {fmt_s(e)} of {info.path.name} is empty",
            path=info.path,
        )
    if max_seconds is not None and e - s > max_seconds:
        hint = f" (setting {limit_setting})" if limit_setting else ""
        raise MediaError(
            MediaErrorCode.TOO_LONG,
            f"the range {fmt_s(s)} to {fmt_s(e)} of {info.path.name} is {fmt_s(e - s)} long; the limit is {fmt_s(max_seconds)}{hint}",
            path=info.path,
        )
    return s, e


def check_count(num: int, limit: int, *, name: str = "num") -> int:
    """Validate a frame count against the configured maximum."""
    if num < 1:
        raise MediaError(MediaErrorCode.INVALID_RANGE, f"{name} must be at least 1 (got {num})")
    if num > limit:
        raise MediaError(
            MediaErrorCode.TOO_MANY_FRAMES,
            f"{name} {num} is above the limit of {limit} frames per request (setting OMNILAB_MEDIA__MAX_FRAMES)",
        )
    return num


def _refuse_text(info: MediaInfo, wanted: str) -> None:
    if info.kind is MediaKind.TEXT:
        raise MediaError(
            MediaErrorCode.UNSUPPORTED,
            f"{info.path.name} is a text file, not {wanted}",
            path=info.path,
        )


def require_video(info: MediaInfo) -> None:
    """Refuses what has no video stream, and pictures larger than images may be
    (:func:`check_video_pixels`)."""
    _refuse_text(info, "a video")
    if not info.has_video:
        what = "an image" if info.kind is MediaKind.IMAGE else "an audio file"
        raise MediaError(
            MediaErrorCode.NO_VIDEO_STREAM,
            f"{info.path.name} is {what} with no video stream",
            path=info.path,
        )
    check_video_pixels(info)


def check_video_pixels(info: MediaInfo, max_pixels: int = MAX_PIXELS) -> None:
    """Refuses, before any frame is decoded, a video whose stream header says its pictures have
    more than ``max_pixels`` (the images' limit): a 200 KB H.264 file of 8192x8192 frames
    decodes to a gigabyte and more."""
    if info.width is None or info.height is None or info.width * info.height <= max_pixels:
        return
    raise MediaError(
        MediaErrorCode.TOO_MANY_PIXELS,
        f"{info.path.name} has {info.width}x{info.height} pictures, more than the "
        f"{max_pixels // 1_000_000} MP allowed; scale it down first",
        path=info.path,
    )


def require_audio(info: MediaInfo) -> None:
    _refuse_text(info, "audio or video")
    if not info.has_audio:
        what = "an image" if info.kind is MediaKind.IMAGE else "a video without sound"
        raise MediaError(
            MediaErrorCode.NO_AUDIO_STREAM,
            f"{info.path.name} is {what}: it has no audio stream",
            path=info.path,
        )
