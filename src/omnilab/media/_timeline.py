"""Placing decoded sound on the file's timeline: where the first frame lies, and a window of it.

Shared by the exact per-packet loop (:func:`omnilab.media.audio.iter_audio`) and the bulk
path (:mod:`omnilab.media._bulk_audio`), so both place samples by the same rules. The window
is the same for float samples (:class:`omnilab.media._float_audio.FloatWindow`, numpy) and for
the PCM16 that a soundtrack's graph makes (:class:`Pcm16Window`, plain bytes: a soundtrack
written to a WAV file never loads numpy).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Generic, TypeVar

import av

from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.probe import MediaInfo

__all__ = ["JITTER_S", "MIX_OPTIONS", "PREROLL_S", "Pcm16Window", "Window", "first_time"]

B = TypeVar("B")

# Decoding starts this long before the requested start: MDCT codecs (AAC, MP3, Vorbis) need the
# previous frame's overlap and Opus asks for 80 ms of pre-roll before output is exact.
PREROLL_S = 0.5
# Frames whose timestamp is within this of where the previous one ended are contiguous:
# Matroska/WebM store milliseconds, so timestamps there jitter by up to ~1 ms.
JITTER_S = 0.005
# Downmixing normalises the mix matrix so that full-scale input stays within [-1, 1] (stereo to
# mono averages the channels); FFmpeg's default for float output sums them at -3 dB, which clips.
MIX_OPTIONS = {"rematrix_maxval": "1.0"}


def first_time(
    info: MediaInfo,
    stream: av.audio.stream.AudioStream,
    frame: av.AudioFrame,
    start: float,
    seeked: bool,
) -> float:
    """Timeline position of the first decoded frame, which must not begin after ``start``...

    ...except where the stream itself begins later than ``start``: before that it is silent.
    """
    if frame.pts is None or frame.time_base is None:
        if seeked:
            raise MediaError(
                MediaErrorCode.CORRUPT,
                f"{info.path.name} has audio without timestamps, so {fmt_s(start)} cannot be found",
                path=info.path,
            )
        return 0.0
    t = float(frame.pts * frame.time_base) - info.start_time
    if t <= start + JITTER_S:
        return t
    first = 0.0
    if stream.start_time is not None and stream.time_base is not None:
        first = float(stream.start_time * stream.time_base) - info.start_time
    if t > first + frame.samples / frame.sample_rate + JITTER_S:
        raise MediaError(
            MediaErrorCode.CORRUPT,
            f"{info.path.name} is damaged: no audio could be decoded at {fmt_s(start)} "
            f"(the first decodable audio is at {fmt_s(t)})",
            path=info.path,
        )
    return t


class Window(ABC, Generic[B]):
    """Places resampled frames on the timeline by their timestamps and keeps one range of it.

    A block ``B`` holds the samples of one frame; subclasses say how to get, measure, cut and
    make silent ones.
    """

    def __init__(self, first: int, count: int, jitter: int) -> None:
        self.first = first
        self.stop = first + count
        self.jitter = jitter
        self.pos: int | None = None
        """Timeline index (in output samples) of the next sample; None before the first frame."""

    @property
    def done(self) -> bool:
        return self.pos is not None and self.pos >= self.stop

    @abstractmethod
    def samples(self, frame: av.AudioFrame) -> B:
        """The samples of a frame of the output format."""

    @abstractmethod
    def size(self, block: B) -> int:
        """Samples (per channel) in ``block``."""

    @abstractmethod
    def cut(self, block: B, lo: int, hi: int) -> B:
        """Samples ``lo`` to ``hi`` of ``block``."""

    @abstractmethod
    def zeros(self, channels: int, count: int) -> B:
        """``count`` samples of silence."""

    def push_all(self, frames: list[av.AudioFrame], info: MediaInfo) -> Iterator[B]:
        for frame in frames:
            yield from self.push(frame, info)

    def push(self, frame: av.AudioFrame, info: MediaInfo) -> Iterator[B]:
        data = self.samples(frame)
        at = None
        if frame.pts is not None and frame.time_base is not None:
            at = round((float(frame.pts * frame.time_base) - info.start_time) * frame.sample_rate)
        assert self.pos is not None, "the caller places the first frame"
        if at is not None and at > self.pos + self.jitter:
            yield from self.silence(at - self.pos, len(frame.layout.channels))
        elif at is not None and at < self.pos - self.jitter:
            # Overlaps what is already out: keep the new part.
            data = self.cut(data, self.pos - at, self.size(data))
        yield from self._take(data)

    def silence(self, count: int, channels: int) -> Iterator[B]:
        if self.pos is None or count <= 0:
            return
        lo, hi = max(self.pos, self.first), min(self.pos + count, self.stop)
        if hi > lo:
            yield self.zeros(channels, hi - lo)
        self.pos += count

    def _take(self, data: B) -> Iterator[B]:
        assert self.pos is not None
        n = self.size(data)
        lo, hi = max(self.pos, self.first), min(self.pos + n, self.stop)
        if hi > lo:
            yield self.cut(data, lo - self.pos, hi - self.pos)
        self.pos += n


class Pcm16Window(Window[memoryview]):
    """Mono signed 16-bit samples in the machine's byte order, as ``memoryview`` of format ``h``.

    A block is a view of the frame's own buffer (or of zero bytes): no copy, no numpy.
    """

    def samples(self, frame: av.AudioFrame) -> memoryview:
        if frame.format.name != "s16" or len(frame.layout.channels) != 1:
            raise ValueError(f"not mono s16: {frame.format.name} {frame.layout.name}")
        return memoryview(frame.planes[0]).cast("h")[: frame.samples]

    def size(self, block: memoryview) -> int:
        return len(block)

    def cut(self, block: memoryview, lo: int, hi: int) -> memoryview:
        return block[lo:hi]

    def zeros(self, channels: int, count: int) -> memoryview:
        if channels != 1:
            raise ValueError(f"PCM16 blocks are mono (asked for {channels} channels)")
        return memoryview(bytes(2 * count)).cast("h")
