"""``frames`` and ``frames_at``: the exact video frame shown at each requested time.

The frame for a request at ``t`` is the one a player displays at ``t``: the last frame whose
presentation time is at or before ``t`` (the first frame when ``t`` precedes it, the last frame
when ``t`` is at or past it). Requests are served in time order whatever order they came in, and
each needed frame is decoded once:

* a request far from the current decode position seeks to the keyframe at or before it and
  decodes forward;
* a request within about one keyframe interval ahead keeps decoding sequentially, because that
  is never slower than seeking back to the same or a nearby keyframe;
* only the frames that are returned are converted to RGB, which is what makes exact frames cost
  little more than the decoding itself.

``keyframes_only=True`` seeks once per request and decodes just the keyframe at or before each
time (no other packet reaches the decoder, which also skips any non-key frame): much faster for
whole-video scans, but a frame's ``timestamp`` may be up to one keyframe interval (GOP) earlier
than ``requested``.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import av
import av.container
from av.video.reformatter import VideoReformatter
from PIL import Image

from omnilab.config import get_settings
from omnilab.media._open import open_input
from omnilab.media._picker import Picker as _Picker
from omnilab.media._plan import plan, seek_gap, threads_for, worker_threads
from omnilab.media._validate import (
    check_count,
    check_time,
    check_time_range,
    require_video,
)
from omnilab.media.budget import decode_slot
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.image import resize
from omnilab.media.probe import MediaInfo, probe

__all__ = ["Frame", "frames", "frames_at"]

_TRANSPOSE = {
    90: Image.Transpose.ROTATE_90,
    180: Image.Transpose.ROTATE_180,
    270: Image.Transpose.ROTATE_270,
}


@dataclass(frozen=True)
class Frame:
    """One decoded video frame.

    Attributes:
        image: RGB picture, turned upright by the stream's display rotation and shrunk so its
            longest edge is at most ``max_edge`` when one applies.
        timestamp: Presentation time of this frame in seconds from the start of the media.
        requested: The time that was asked for.
        keyframe: Whether the frame is a keyframe (always true with ``keyframes_only``).
    """

    image: Image.Image
    timestamp: float
    requested: float
    keyframe: bool


def frames(
    path: str | Path,
    start: float = 0.0,
    end: float | None = None,
    num: int = 8,
    *,
    max_edge: int | None = None,
    keyframes_only: bool = False,
) -> list[Frame]:
    """Return ``num`` frames at times spread evenly over ``[start, end]``, both ends included.

    Args:
        path: A video file.
        start: First time in seconds.
        end: Last time in seconds; ``None`` means the end of the video.
        num: How many frames (at most the ``media.max_frames`` setting).
        max_edge: Longest edge of the returned images in pixels; ``None`` uses the
            ``media.max_edge`` setting (which by default keeps the source size).
        keyframes_only: Return the keyframe at or before each time instead of the exact frame.

    Returns:
        The frames in time order, one per requested time (neighbouring times may share a frame).

    Raises:
        MediaError: ``NOT_FOUND``, ``UNSUPPORTED``, ``CORRUPT``, ``NO_VIDEO_STREAM``, ``TS_OOB``,
            ``INVALID_RANGE`` or ``TOO_MANY_FRAMES``.
    """
    info = _video_info(path)
    _, hi = check_time_range(info, start, end, allow_empty=True)
    check_count(num, get_settings().media.max_frames)
    # The validated values are linspaced as given (not clamped), so ``requested`` echoes the call.
    return _extract(
        info, _linspace(start, hi if end is None else end, num), max_edge, keyframes_only
    )


def _linspace(start: float, stop: float, num: int) -> list[float]:
    """``numpy.linspace(start, stop, num)`` to the bit (same operations, last value ``stop``),
    without importing numpy: ``omnilab media frames`` starts faster."""
    if num == 1:
        return [float(start)]
    step = (stop - start) / (num - 1)
    return [*(i * step + start for i in range(num - 1)), float(stop)]


def frames_at(
    path: str | Path,
    timestamps: Sequence[float],
    *,
    max_edge: int | None = None,
    keyframes_only: bool = False,
) -> list[Frame]:
    """Return the frame shown at each of ``timestamps``, in the order they were given.

    Times may be unsorted and repeated; every needed frame is decoded once.

    Args:
        path: A video file.
        timestamps: Times in seconds from the start of the video.
        max_edge: Longest edge of the returned images in pixels; ``None`` uses the
            ``media.max_edge`` setting (which by default keeps the source size).
        keyframes_only: Return the keyframe at or before each time instead of the exact frame.

    Returns:
        One frame per entry of ``timestamps``, in the same order.

    Raises:
        MediaError: ``NOT_FOUND``, ``UNSUPPORTED``, ``CORRUPT``, ``NO_VIDEO_STREAM``, ``TS_OOB``,
            ``INVALID_RANGE`` or ``TOO_MANY_FRAMES``.
    """
    info = _video_info(path)
    requested = [float(t) for t in timestamps]
    # The count is checked before the times so an oversized list is rejected without a scan.
    check_count(len(requested), get_settings().media.max_frames, name="len(timestamps)")
    for i, t in enumerate(requested):
        check_time(info, t, name=f"timestamps[{i}]")
    return _extract(info, requested, max_edge, keyframes_only)


def _video_info(path: str | Path) -> MediaInfo:
    info = probe(path)
    require_video(info)
    return info


def _extract(
    info: MediaInfo, requested: list[float], max_edge: int | None, keyframes_only: bool
) -> list[Frame]:
    edge = get_settings().media.max_edge if max_edge is None else max_edge
    if edge is not None and edge < 1:
        raise MediaError(
            MediaErrorCode.INVALID_RANGE, f"max_edge must be at least 1 pixel (got {edge})"
        )
    batches = plan(info, sorted(set(requested)), keyframes_only)
    shown: dict[float, _Shown] = {}
    if len(batches) == 1:
        shown = _pick_batch(info, batches[0], edge, keyframes_only, threads_for(batches[0]))
    else:
        # Each worker has its own container and decoder; PyAV releases the GIL while FFmpeg
        # demuxes, decodes and converts, Pillow while it shrinks, so the batches (runs of a
        # sparse request, keyframe-aligned pieces of a dense one: see ``_plan``) decode on as
        # many cores as there are.
        with ThreadPoolExecutor(len(batches), thread_name_prefix="omnilab-frames") as pool:
            jobs = [
                pool.submit(
                    _pick_batch,
                    info,
                    batch,
                    edge,
                    keyframes_only,
                    *worker_threads(batch, len(batches)),
                )
                for batch in batches
            ]
            for job in jobs:
                shown.update(job.result())
    return [
        Frame(image=image, timestamp=timestamp, requested=t, keyframe=key)
        for t in requested
        for image, timestamp, key in [shown[t]]
    ]


# (image, timestamp, keyframe) of the frame shown at a requested time.
_Shown = tuple[Image.Image, float, bool]


def _pick_batch(
    info: MediaInfo,
    batch: list[list[float]],
    edge: int | None,
    keyframes_only: bool,
    threads: str,
    thread_count: int = 0,
) -> dict[float, _Shown]:
    """The frame shown at each time of ``batch`` (groups of sorted times), decoded in order."""
    transpose = _TRANSPOSE.get(info.rotation % 360)
    shown: dict[float, _Shown] = {}
    # Keyed by pts: neighbouring requests often land on the same frame, converted only once.
    images: dict[int, Image.Image] = {}
    # One reformatter keeps its swscale context: setting one up costs as much as converting.
    reformatter = VideoReformatter()
    with decode_slot(), open_input(info.path) as container:
        picker = _Picker(
            container,
            info,
            keyframes_only=keyframes_only,
            threads=threads,
            thread_count=thread_count,
            seek_gap=seek_gap(info),
        )
        for t, (pts, frame) in picker.pick([t for group in batch for t in group]):
            # Converted as soon as chosen, so decoded frames go back to the decoder's pool.
            if pts not in images:
                image = resize(_rgb(frame, reformatter), edge)
                images[pts] = image.transpose(transpose) if transpose is not None else image
            shown[t] = (images[pts], picker.seconds(pts), bool(frame.key_frame))
    return shown


def _rgb(frame: av.VideoFrame, reformatter: VideoReformatter) -> Image.Image:
    """The frame as an RGB image.

    ``VideoFrame.to_image`` copies row by row in Python and twice more after that, which costs
    more than decoding a frame. Here swscale writes RGBX, the 4-byte layout PIL keeps RGB in, and
    PIL copies it once. Converting to 3-byte RGB instead costs about the same but leaves
    short-lived buffers of another size between the kept images, and the heap then grows by
    about the size of all converted frames (measured: 64 frames at 720p peaked at 480 MB instead
    of 320 MB from the second call on).
    """
    plane = reformatter.reformat(frame, format="rgb0").planes[0]
    size = (plane.width, plane.height)
    # A view of the plane, no copy (numpy is not needed for that).
    return Image.frombytes("RGB", size, memoryview(plane), "raw", "RGBX", plane.line_size, 1)
