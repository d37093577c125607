"""The decoding walk behind :func:`omnilab.media.frames`: the frame shown at each sorted time.

See :mod:`omnilab.media.video` for the rules (the frame a player displays at ``t``; a far
request seeks to the keyframe before it, a near one decodes on).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator

import av
import av.container

from omnilab.media._open import only_read
from omnilab.media._validate import end_tolerance
from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.probe import MediaInfo, _is_cover_art

__all__ = ["EPS", "Picker"]

# Frame times are compared in float seconds; this absorbs time-base rounding (1/90000 s and up).
EPS = 1e-6
# Decoders whose ``skip_frame = NONREF`` drops exactly the pictures no other picture refers to
# (H.264: nal_ref_idc 0; HEVC: sub-layer non-reference pictures), so skipping them leaves every
# other decoded picture bit-identical. Other decoders are never asked to skip.
_NONREF_CODECS = frozenset({"h264", "hevc"})
# A picture is decoded in full when it lies within this many frame durations before a requested
# time: on a constant-rate stream the frame shown at ``t`` is at most one duration before it.
_NEAR_FRAMES = 2.0


class Picker:
    """Walks one video stream forward, choosing the frame displayed at each sorted time."""

    def __init__(
        self,
        container: av.container.InputContainer,
        info: MediaInfo,
        *,
        keyframes_only: bool,
        threads: str = "AUTO",
        thread_count: int = 0,
        seek_gap: float,
    ) -> None:
        self.container = container
        self.info = info
        self.keyframes_only = keyframes_only
        self.vs = next(s for s in container.streams.video if not _is_cover_art(s))
        only_read(container, self.vs)
        # Exact picks skip the non-reference pictures (B-frames nothing refers to) that lie
        # between requested times; :meth:`_skipped_shown` checks each answer and decodes again
        # without skipping when a skipped picture could have been the one shown.
        self.skip_nonref = not keyframes_only and self.vs.codec_context.name in _NONREF_CODECS
        self.times: list[float] = []
        self.maybe_skipped: list[int] = []
        self.skipping = False
        # Pictures that came out of the decoder (tests compare walks by it).
        self.decoded_count = 0
        if keyframes_only:
            self.vs.codec_context.skip_frame = "NONKEY"
            # One packet per seek leaves frame threads nothing to overlap, and starting their
            # pipeline after every seek costs more than the keyframe itself; slices still help.
            self.vs.thread_type = "SLICE" if threads == "AUTO" else threads
        else:
            self.vs.thread_type = threads
        if thread_count:
            # This walk's share of the cores (others walk beside it); 0 lets FFmpeg choose.
            self.vs.codec_context.thread_count = thread_count
        self.tb = float(self.vs.time_base) if self.vs.time_base else 1.0 / av.time_base
        self.origin = info.start_time
        self.frame_seconds = 1.0 / info.fps if info.fps else 0.04
        self.seek_gap = seek_gap
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
        self.times = times
        for t in times:
            yield t, self._keyframe_at(t) if self.keyframes_only else self._frame_at(t)

    def _keyframe_at(self, t: float) -> tuple[int, av.VideoFrame]:
        self._seek(t)
        found = self._next_keyframe()
        if found is not None and self.seconds(found[0]) > t + EPS:
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
        self._walk_to(t)
        if self._skipped_shown(t):
            # A skipped picture lies between the one held and ``t`` (frames farther apart than
            # the stream's rate says): decode this time again with nothing skipped.
            self.skip_nonref = False
            self._seek_to(t)
        if self.held is not None and self.ended and self._missing_after(self.held, t):
            raise self._stopped(t)
        found = self.held or self.ahead
        if found is None:
            raise self._stopped(t)
        return found

    def _walk_to(self, t: float) -> None:
        """Bring the decoder to ``t``: decode on when it is near, seek when it is far."""
        if self.ahead is not None and self.seconds(self.ahead[0]) > t + EPS:
            return  # the held frame is still displayed; no decoding needed
        position = self.ahead or self.held
        if position is None or t - self.seconds(position[0]) > self.seek_gap:
            self._seek_to(t)
        else:
            self._advance(t)

    def _seek_to(self, t: float) -> None:
        self._seek(t)
        self._advance(t)
        first = self.held or self.ahead
        if self.held is None and first is not None and self._seeked_past_start(first):
            self._seek(None)
            self._advance(t)

    def _advance(self, t: float) -> None:
        """Decode forward until the next frame is after ``t``."""
        if self.ahead is not None:
            if self.seconds(self.ahead[0]) > t + EPS:
                return
            self.held, self.ahead = self.ahead, None
        while not self.ended:
            nxt = self._next()
            if nxt is None:
                break
            if self.seconds(nxt[0]) <= t + EPS:
                self.held = nxt
            else:
                self.ahead = nxt
                break

    def _skipped_shown(self, t: float) -> bool:
        """True when a picture skipped since the last seek may be the one shown at ``t``.

        A skipped picture at or before ``t`` but after the held one would have been shown
        instead of it (a reference picture there would have been decoded and held).
        """
        if not self.maybe_skipped:
            return False
        held = self.seconds(self.held[0]) if self.held is not None else -math.inf
        # Pictures up to the held one can never be shown again: forget them.
        self.maybe_skipped = [p for p in self.maybe_skipped if self.seconds(p) > held + EPS]
        return any(self.seconds(p) <= t + EPS for p in self.maybe_skipped)

    def _packets_decoded(self) -> Iterator[av.VideoFrame]:
        """``container.decode`` for the stream, skipping the non-reference pictures far from
        every requested time (see :attr:`skip_nonref`)."""
        codec = self.vs.codec_context
        near = _NEAR_FRAMES * self.frame_seconds
        for packet in self.container.demux(self.vs):
            if self.skip_nonref:
                skip = packet.pts is not None and not self._near_request(packet.pts, near)
                if skip != self.skipping:
                    codec.skip_frame = "NONREF" if skip else "DEFAULT"
                    self.skipping = skip
                if skip and packet.pts is not None:
                    self.maybe_skipped.append(packet.pts)
            elif self.skipping:
                codec.skip_frame = "DEFAULT"
                self.skipping = False
            yield from packet.decode()

    def _near_request(self, pts: int, near: float) -> bool:
        """Whether the picture at ``pts`` may be shown at a requested time (or is close before
        one): ``near`` seconds before a time up to the time itself."""
        at = self.seconds(pts)
        i = bisect.bisect_left(self.times, at - EPS)
        return i < len(self.times) and self.times[i] <= at + near

    def _next(self) -> tuple[int, av.VideoFrame] | None:
        """The next decoded frame with a timestamp, or None at the end of the readable data."""
        if self.decoded is None:
            self.decoded = self._packets_decoded()
        try:
            for frame in self.decoded:
                self.decoded_count += 1
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
            target = math.floor((t + self.origin) / self.tb + EPS)
        self.container.seek(target, stream=self.vs, backward=True, any_frame=False)
        self.decoded = None
        self.maybe_skipped.clear()
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
        if t <= shown_until + EPS:
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
