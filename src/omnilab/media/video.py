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

import math
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import av
import av.container
from av.video.reformatter import VideoReformatter
from PIL import Image

from omnilab.config import get_settings
from omnilab.media._open import open_input
from omnilab.media._validate import (
    check_count,
    check_time,
    check_time_range,
    end_tolerance,
    require_video,
)
from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.image import resize
from omnilab.media.probe import MediaInfo, _is_cover_art, probe

__all__ = ["Frame", "frames", "frames_at"]

# Frame times are compared in float seconds; this absorbs time-base rounding (1/90000 s and up).
_EPS = 1e-6
# Without a probed keyframe interval probe saw fewer than two keyframes in its scan (about a
# minute of video at 25 fps), so keyframes are at least that sparse: decode onward up to this far.
_UNKNOWN_GOP_SECONDS = 60.0
# Decoding workers at most: each holds a container and a decoder, and frames of GOPs far apart
# are the only work they split.
_MAX_WORKERS = 4
# Below this many frames of estimated decoding a request stays in one worker.
_PARALLEL_MIN_FRAMES = 150
# Decoding cost of a keyframe (plus its seek) in P-frame units, for sharing work among workers.
_KEYFRAME_COST = 4.0
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
    batches = _plan(info, sorted(set(requested)), keyframes_only)
    shown: dict[float, _Shown] = {}
    if len(batches) == 1:
        shown = _pick_batch(info, batches[0], edge, keyframes_only, _threads(batches[0]))
    else:
        # Each worker has its own container and decoder; PyAV releases the GIL while FFmpeg
        # demuxes, decodes and scales, so the batches decode on as many cores as there are.
        with ThreadPoolExecutor(len(batches), thread_name_prefix="omnilab-frames") as pool:
            jobs = [
                pool.submit(_pick_batch, info, batch, edge, keyframes_only, "NONE")
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


def _plan(info: MediaInfo, times: list[float], keyframes_only: bool) -> list[list[list[float]]]:
    """Split sorted ``times`` into batches of groups, one batch per decoding worker.

    A group is a run of times one forward decode serves (no gap wider than the seek distance
    of :class:`_Picker`), so splitting between groups never decodes a GOP twice. Groups are
    dealt to workers largest first by their decoding cost in frames (a seek lands on average
    half a GOP before its time); small requests stay in one worker, where starting a thread
    and opening the file again would cost more than they save.
    """
    gap = max(info.keyframe_interval or _UNKNOWN_GOP_SECONDS, 1.0 / (info.fps or 25.0))
    groups: list[list[float]] = []
    for t in times:
        if groups and t - groups[-1][-1] <= gap:
            groups[-1].append(t)
        else:
            groups.append([t])
    fps = info.fps or 25.0
    gop = info.keyframe_interval or _UNKNOWN_GOP_SECONDS

    def cost(group: list[float]) -> float:
        if keyframes_only:
            return _KEYFRAME_COST * len(group)
        return (gop / 2 + group[-1] - group[0]) * fps

    workers = min(_workers(), len(groups))
    if workers < 2 or sum(map(cost, groups)) < _PARALLEL_MIN_FRAMES:
        return [groups]
    loads = [0.0] * workers
    batches: list[list[list[float]]] = [[] for _ in range(workers)]
    for group in sorted(groups, key=cost, reverse=True):
        i = loads.index(min(loads))
        batches[i].append(group)
        loads[i] += cost(group)
    return [sorted(b) for b in batches if b]


def _workers() -> int:
    """Cores this process may run on, at most ``_MAX_WORKERS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(_MAX_WORKERS, cores))


def _threads(batch: list[list[float]]) -> str:
    """Decoder threading for a worker that serves ``batch`` alone.

    Frame threads overlap consecutive frames of one long decode, but after every seek their
    pipeline is flushed and refilled: for many short decodes they cost more CPU (measured
    on 50 seeks through a 720p H.264 file: 2.6 CPU s with frame threads, 1.7 without) and
    no wall-clock time.
    """
    return "AUTO" if len(batch) == 1 else "NONE"


def _pick_batch(
    info: MediaInfo,
    batch: list[list[float]],
    edge: int | None,
    keyframes_only: bool,
    threads: str,
) -> dict[float, _Shown]:
    """The frame shown at each time of ``batch`` (groups of sorted times), decoded in order."""
    transpose = _TRANSPOSE.get(info.rotation % 360)
    shown: dict[float, _Shown] = {}
    # Keyed by pts: neighbouring requests often land on the same frame, converted only once.
    images: dict[int, Image.Image] = {}
    # One reformatter keeps its swscale context: setting one up costs as much as converting.
    reformatter = VideoReformatter()
    with open_input(info.path) as container:
        picker = _Picker(container, info, keyframes_only=keyframes_only, threads=threads)
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


class _Picker:
    """Walks one video stream forward, choosing the frame displayed at each sorted time."""

    def __init__(
        self,
        container: av.container.InputContainer,
        info: MediaInfo,
        *,
        keyframes_only: bool,
        threads: str = "AUTO",
    ) -> None:
        self.container = container
        self.info = info
        self.keyframes_only = keyframes_only
        self.vs = next(s for s in container.streams.video if not _is_cover_art(s))
        if keyframes_only:
            self.vs.codec_context.skip_frame = "NONKEY"
            # One packet per seek leaves frame threads nothing to overlap, and starting their
            # pipeline after every seek costs more than the keyframe itself; slices still help.
            self.vs.thread_type = "SLICE" if threads == "AUTO" else threads
        else:
            self.vs.thread_type = threads
        self.tb = float(self.vs.time_base) if self.vs.time_base else 1.0 / av.time_base
        self.origin = info.start_time
        self.frame_seconds = 1.0 / info.fps if info.fps else 0.04
        self.seek_gap = info.keyframe_interval or _UNKNOWN_GOP_SECONDS
        # Decoder state: ``held`` is the last frame at or before the current time, ``ahead`` the
        # first frame after it (already decoded, so it is not lost when the next time comes).
        self.decoded: Iterator[av.VideoFrame] | None = None
        self.held: tuple[int, av.VideoFrame] | None = None
        self.ahead: tuple[int, av.VideoFrame] | None = None
        self.ended = False
        self.failed = False
        # With ``keyframes_only``: the keyframe returned last, kept across seeks.
        self.last_key: tuple[int, av.VideoFrame] | None = None

    def seconds(self, pts: int) -> float:
        """Media time of a stream timestamp."""
        return pts * self.tb - self.origin

    def pick(self, times: list[float]) -> Iterator[tuple[float, tuple[int, av.VideoFrame]]]:
        """Yield each of ``times`` (sorted ascending) with the ``(pts, frame)`` shown then."""
        for t in times:
            yield t, self._keyframe_at(t) if self.keyframes_only else self._frame_at(t)

    def _keyframe_at(self, t: float) -> tuple[int, av.VideoFrame]:
        self._seek(t)
        found = self._next_keyframe()
        if found is not None and self.seconds(found[0]) > t + _EPS:
            # The seek landed past ``t`` (a sparse or broken index): the stream start is safe.
            self._seek(None)
            found = self._next_keyframe()
        if found is None:
            raise self._stopped(t)
        return found

    def _next_keyframe(self) -> tuple[int, av.VideoFrame] | None:
        """Decode only the next keyframe packet, then drain the decoder for its picture.

        Without the drain a decoder that reorders frames (B-frames) holds the keyframe back
        until later pictures arrive; with non-key frames skipped those are the next keyframes,
        so each request would decode two GOPs' worth of keyframes and demux two GOPs.
        """
        codec = self.vs.codec_context
        try:
            for packet in self.container.demux(self.vs):
                if not packet.is_keyframe or packet.size == 0:
                    continue
                last = self.last_key
                if last is not None and packet.pts is not None and packet.pts == last[0]:
                    return last  # requests closer than a GOP share their keyframe: decode it once
                codec.flush_buffers()  # a drained decoder takes no packet until it is reset
                for frame in [*packet.decode(), *codec.decode(None)]:
                    pts = frame.pts if frame.pts is not None else frame.dts
                    if pts is not None:
                        self.last_key = (pts, frame)
                        return self.last_key
        except (av.FFmpegError, EOFError):
            self.failed = True
        self.ended = True
        return None

    def _frame_at(self, t: float) -> tuple[int, av.VideoFrame]:
        if self.ahead is not None and self.seconds(self.ahead[0]) > t + _EPS:
            return self.held or self.ahead  # still displayed; no decoding needed
        position = self.ahead or self.held
        if position is None or t - self.seconds(position[0]) > self.seek_gap:
            self._seek(t)
            self._advance(t)
            first = self.held or self.ahead
            if self.held is None and first is not None and self._seeked_past_start(first):
                self._seek(None)
                self._advance(t)
        else:
            self._advance(t)
        if self.held is not None and self.ended and self._missing_after(self.held, t):
            raise self._stopped(t)
        found = self.held or self.ahead
        if found is None:
            raise self._stopped(t)
        return found

    def _advance(self, t: float) -> None:
        """Decode forward until the next frame is after ``t``."""
        if self.ahead is not None:
            if self.seconds(self.ahead[0]) > t + _EPS:
                return
            self.held, self.ahead = self.ahead, None
        while not self.ended:
            nxt = self._next()
            if nxt is None:
                break
            if self.seconds(nxt[0]) <= t + _EPS:
                self.held = nxt
            else:
                self.ahead = nxt
                break

    def _next(self) -> tuple[int, av.VideoFrame] | None:
        """The next decoded frame with a timestamp, or None at the end of the readable data."""
        if self.decoded is None:
            self.decoded = self.container.decode(self.vs)
        try:
            for frame in self.decoded:
                pts = frame.pts if frame.pts is not None else frame.dts
                if pts is not None:
                    return pts, frame
        except (av.FFmpegError, EOFError):
            # Damaged or cut-short data ends the stream here; whether that matters depends on
            # what was asked for, so the caller decides (see ``_missing_after``).
            self.failed = True
        self.ended = True
        return None

    def _seek(self, t: float | None) -> None:
        """Position the demuxer on the keyframe at or before ``t`` (None: the stream start)."""
        if t is None:
            target = self.vs.start_time or 0
        else:
            target = math.floor((t + self.origin) / self.tb + _EPS)
        self.container.seek(target, stream=self.vs, backward=True, any_frame=False)
        self.decoded = None
        self.held = self.ahead = None
        self.ended = False

    def _seeked_past_start(self, first: tuple[int, av.VideoFrame]) -> bool:
        # A first frame after ``t`` is right only when it is the first frame of the stream.
        start = self.vs.start_time
        return start is None or first[0] > start

    def _stream_end(self) -> float:
        duration = self.info.duration or 0.0
        if self.vs.duration:
            return self.seconds((self.vs.start_time or 0) + self.vs.duration)
        return duration

    def _missing_after(self, last: tuple[int, av.VideoFrame], t: float) -> bool:
        """True when ``t`` needs a frame after ``last`` that the file should have but cannot give."""
        shown_until = self.seconds(last[0]) + self.frame_seconds
        if t <= shown_until + _EPS:
            return False
        return self.failed or shown_until + end_tolerance(self.info) < self._stream_end()

    def _stopped(self, t: float) -> MediaError:
        last = self.held or self.ahead
        stop = self.seconds(last[0]) if last is not None else self._readable_end()
        where = f"decoding stopped at {fmt_s(stop)}" if stop is not None else "no frame decodes"
        return MediaError(
            MediaErrorCode.CORRUPT,
            f"{self.info.path.name} is damaged or cut short: {where}, before the requested "
            f"{fmt_s(t)} (duration {fmt_s(self.info.duration or 0.0)})",
            path=self.info.path,
        )

    def _readable_end(self) -> float | None:
        """Time of the last video packet that can be read (demuxing only: this is an error path)."""
        end: float | None = None
        try:
            self._seek(None)
            for packet in self.container.demux(self.vs):
                if packet.pts is not None:
                    t = self.seconds(packet.pts)
                    end = t if end is None else max(end, t)
        except (av.FFmpegError, EOFError):
            pass  # the damage being reported; what was read so far is the answer
        return end
