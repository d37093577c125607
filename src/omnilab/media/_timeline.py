"""Placing decoded sound on the file's timeline: where the first frame lies, and a window of it.

Shared by the exact per-packet loop (:func:`omnilab.media.audio.iter_audio`) and the bulk
path (:mod:`omnilab.media._bulk_audio`), so both place samples by the same rules.
"""

from __future__ import annotations

from collections.abc import Iterator

import av
import numpy as np
from numpy.typing import NDArray

from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.probe import MediaInfo

__all__ = ["JITTER_S", "MIX_OPTIONS", "PREROLL_S", "Window", "first_time"]

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


class Window:
    """Places resampled frames on the timeline by their timestamps and keeps one range of it."""

    def __init__(self, first: int, count: int, jitter: int) -> None:
        self.first = first
        self.stop = first + count
        self.jitter = jitter
        self.pos: int | None = None
        """Timeline index (in output samples) of the next sample; None before the first frame."""

    @property
    def done(self) -> bool:
        return self.pos is not None and self.pos >= self.stop

    def push_all(
        self, frames: list[av.AudioFrame], info: MediaInfo
    ) -> Iterator[NDArray[np.float32]]:
        for frame in frames:
            yield from self.push(frame, info)

    def push(self, frame: av.AudioFrame, info: MediaInfo) -> Iterator[NDArray[np.float32]]:
        data = frame.to_ndarray().astype(np.float32, copy=False)
        at = None
        if frame.pts is not None and frame.time_base is not None:
            at = round((float(frame.pts * frame.time_base) - info.start_time) * frame.sample_rate)
        assert self.pos is not None, "the caller places the first frame"
        if at is not None and at > self.pos + self.jitter:
            yield from self.silence(at - self.pos, data.shape[0])
        elif at is not None and at < self.pos - self.jitter:
            data = data[:, self.pos - at :]  # overlaps what is already out: keep the new part
        yield from self._take(data)

    def silence(self, count: int, channels: int) -> Iterator[NDArray[np.float32]]:
        if self.pos is None or count <= 0:
            return
        lo, hi = max(self.pos, self.first), min(self.pos + count, self.stop)
        if hi > lo:
            yield np.zeros((channels, hi - lo), dtype=np.float32)
        self.pos += count

    def _take(self, data: NDArray[np.float32]) -> Iterator[NDArray[np.float32]]:
        assert self.pos is not None
        n = data.shape[1]
        lo, hi = max(self.pos, self.first), min(self.pos + n, self.stop)
        if hi > lo:
            yield data[:, lo - self.pos : hi - self.pos]
        self.pos += n
