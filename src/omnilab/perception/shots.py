"""Shot boundaries: colour-histogram differences between frames sampled from the video.

The video is decoded once, front to back. Frames ``1 / perception.shot_sample_fps`` apart are
shrunk to 96 px wide, summarised by a joint RGB histogram (8 levels per channel) and compared by
total-variation distance (half the L1 distance of the normalised histograms, 0 = same colours,
1 = disjoint). A distance above ``perception.shot_threshold`` is a cut, placed on the frame with
the largest frame-to-frame change since the previous sample (the frames in between are kept and
summarised only then), so cut times are frame-accurate even though detection looks at a few
frames per second. Cuts less than
``perception.min_shot_seconds`` after the previous one are ignored (flashes, strobing).

Colour histograms ignore motion inside a shot (good: pans and moving people are not cuts) but
miss cuts between two shots of near-identical colours, and slow cross-fades shorter than the
sampling step look like one cut.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.media._open import open_input
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.probe import MediaInfo, probe
from omnilab.perception.types import Shot

__all__ = ["colour_histogram", "detect_shots", "histogram_distance"]

_THUMB_WIDTH = 96
_LEVELS = 8


def colour_histogram(rgb: NDArray[np.uint8]) -> NDArray[np.float64]:
    """Normalised joint RGB histogram (``8**3`` bins) of an ``H x W x 3`` image."""
    q = (rgb.reshape(-1, 3) // (256 // _LEVELS)).astype(np.int64)
    idx = (q[:, 0] * _LEVELS + q[:, 1]) * _LEVELS + q[:, 2]
    hist = np.bincount(idx, minlength=_LEVELS**3).astype(np.float64)
    return hist / max(1.0, float(hist.sum()))


def histogram_distance(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Total-variation distance of two normalised histograms, in 0..1."""
    return 0.5 * float(np.abs(a - b).sum())


def detect_shots(
    path: str | Path,
    *,
    threshold: float | None = None,
    sample_fps: float | None = None,
    min_shot: float | None = None,
    on_progress: Callable[[float, float], None] | None = None,
) -> list[Shot]:
    """Split a video into shots, each with the time of a representative keyframe.

    Args:
        path: A video file.
        threshold: Histogram distance that counts as a cut; default ``perception.shot_threshold``.
        sample_fps: Frames per second compared; default ``perception.shot_sample_fps``.
        min_shot: Shortest shot in seconds; default ``perception.min_shot_seconds``.
        on_progress: Called with ``(seconds decoded, duration)`` about once per second of video.

    Returns:
        Shots covering the video end to end, in order; one shot when there is no cut.

    Raises:
        MediaError: The file is unreadable or has no video stream (``NO_VIDEO_STREAM``).
    """
    s = get_settings().perception
    thr = s.shot_threshold if threshold is None else threshold
    step = 1.0 / (s.shot_sample_fps if sample_fps is None else sample_fps)
    shortest = s.min_shot_seconds if min_shot is None else min_shot
    info = probe(path)
    if not info.has_video:
        raise MediaError(
            MediaErrorCode.NO_VIDEO_STREAM,
            f"{info.path.name} has no video stream, so it has no shots",
            path=info.path,
        )
    cuts, samples, end = _scan(info, thr, step, shortest, on_progress)
    duration = info.duration if info.duration is not None else end
    bounds = [0.0, *cuts, max(duration, cuts[-1] if cuts else 0.0)]
    shots = []
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        inside = [t for t in samples if a <= t < b] or [a]
        middle = min(inside, key=lambda t: abs(t - (a + b) / 2))
        shots.append(Shot(index=i, start=round(a, 3), end=round(b, 3), keyframe=round(middle, 3)))
    return shots


def _thumb_histogram(frame: av.VideoFrame, width: int, height: int) -> NDArray[np.float64]:
    small = frame.reformat(width=width, height=height, format="rgb24").to_ndarray()
    return colour_histogram(np.asarray(small, dtype=np.uint8))


def _scan(
    info: MediaInfo,
    threshold: float,
    step: float,
    min_shot: float,
    on_progress: Callable[[float, float], None] | None,
) -> tuple[list[float], list[float], float]:
    """Decode every frame; returns cut times, sampled frame times and the last frame time.

    Only sampled frames are summarised (shrinking and histogramming every frame cost twice the
    decoding itself); the frames since the previous sample are kept, and only when two samples
    differ by a cut are they summarised to find the frame where the change peaks.
    """
    cuts: list[float] = []
    samples: list[float] = []
    total = info.duration or 0.0
    width = _THUMB_WIDTH
    height = max(2, round(_THUMB_WIDTH * (info.height or 1) / (info.width or 1)) // 2 * 2)
    prev_sample: NDArray[np.float64] | None = None
    pending: list[tuple[float, av.VideoFrame]] = []  # frames decoded since the last sample
    next_sample = 0.0
    next_report = 1.0
    t = 0.0
    with open_input(info.path) as container:
        stream = next(iter(container.streams.video))
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            # PyAV types frame.time as float, but it is None for frames without a timestamp.
            when: float | None = frame.time
            if when is None:
                continue
            t = max(0.0, float(when) - info.start_time)
            if t + 1e-6 < next_sample:
                pending.append((t, frame))
                continue
            next_sample = t + step
            hist = _thumb_histogram(frame, width, height)
            if prev_sample is not None and histogram_distance(hist, prev_sample) > threshold:
                cut = _peak_change(prev_sample, pending, (t, hist), width, height)
                if cut - (cuts[-1] if cuts else 0.0) >= min_shot and cut > 0.0:
                    cuts.append(cut)
            prev_sample = hist
            samples.append(t)
            pending = []
            if on_progress is not None and t >= next_report:
                on_progress(t, total)
                next_report = t + 1.0
    if on_progress is not None:
        on_progress(total or t, total or t)
    return cuts, samples, t


def _peak_change(
    before: NDArray[np.float64],
    between: list[tuple[float, av.VideoFrame]],
    sample: tuple[float, NDArray[np.float64]],
    width: int,
    height: int,
) -> float:
    """The time of the frame, after the sample ``before``, that differs most from its predecessor."""
    best_time, best_jump = sample[0], -1.0
    prev = before
    for when, frame in between:
        hist = _thumb_histogram(frame, width, height)
        jump = histogram_distance(hist, prev)
        if jump > best_jump:
            best_time, best_jump = when, jump
        prev = hist
    if histogram_distance(sample[1], prev) > best_jump:
        best_time = sample[0]
    return best_time
