"""Audio extraction: exact, sample-accurate segments of audio files and of the sound of videos.

Times are seconds on the file's own timeline (0 = the first sample, as :func:`probe` reports it).
Decoding seeks a little before ``start`` (codecs such as AAC, MP3 and Opus need the preceding
frames to decode the first one correctly), then places every decoded frame on the timeline by
its timestamp, so encoder priming (AAC, Opus pre-skip, LAME delay) and a stream that starts late
never shift the result: sample ``i`` of the output is the sound at ``start + i / sample_rate``.
"""

from __future__ import annotations

import uuid
import wave
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import av

from omnilab.config import get_settings
from omnilab.media._bulk_audio import IrregularError, iter_bulk
from omnilab.media._open import only_read, open_input
from omnilab.media._timeline import JITTER_S, MIX_OPTIONS, PREROLL_S, first_time
from omnilab.media._validate import check_time_range, end_tolerance, require_audio
from omnilab.media.budget import decode_slot
from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.probe import MediaInfo, probe

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from omnilab.media.cache import MediaCache

# iter_audio, seek_before and write_output are shared with clip.py, not part of the public API.
__all__ = ["audio_samples", "audio_segment"]

# Bump when the output of an operation changes, so old cache entries are no longer hit.
_CACHE_VERSION = 1


def audio_samples(
    path: str | Path,
    start: float = 0.0,
    end: float | None = None,
    *,
    sample_rate: int | None = None,
) -> NDArray[np.float32]:
    """Mono float32 samples in [-1, 1] of ``[start, end)`` seconds (``end=None``: to the end).

    ``sample_rate`` defaults to ``media.audio_sample_rate`` (16 kHz). The result has exactly
    ``round((end - start) * sample_rate)`` samples, ``end`` being clamped to the duration.
    Works on audio files and on the audio track of videos; raises :class:`MediaError`.
    """
    rate = sample_rate if sample_rate is not None else get_settings().media.audio_sample_rate
    if rate < 1:
        raise ValueError(f"sample_rate must be a positive number of Hz (got {rate})")
    info, s, e = _validated(path, start, end)
    return _mono(info, s, e, rate)


def audio_segment(
    path: str | Path,
    start: float = 0.0,
    end: float | None = None,
    *,
    out: Path | None = None,
    cache: MediaCache | None = None,
) -> Path:
    """``[start, end)`` as a mono PCM16 WAV at ``media.audio_sample_rate`` (16 kHz).

    Without ``out`` the file lives in the media cache (``MediaCache.default()`` unless ``cache``
    is given) and a repeated request returns it without decoding; with ``out`` it is written
    there atomically (nothing is left at ``out`` if it fails).
    """
    info, s, e = _validated(path, start, end)
    rate = get_settings().media.audio_sample_rate

    def produce(dest: Path) -> None:
        with decode_slot(gil_bound=True):
            try:  # PCM16 made by FFmpeg, the same bytes as _write_wav's conversion
                _write_pcm16(
                    dest, rate, iter_bulk(info, s, e, rate=rate, layout="mono", pcm16=True)
                )
            except IrregularError:  # written again from the start, by the exact loop
                _write_wav(dest, rate, iter_audio(info, s, e, rate=rate, layout="mono"))

    params = {"start": s, "end": e, "rate": rate, "v": _CACHE_VERSION}
    return write_output(info.path, "audio_segment", params, ".wav", produce, out=out, cache=cache)


def write_output(
    source: Path,
    op: str,
    params: Mapping[str, object],
    suffix: str,
    produce: Callable[[Path], None],
    *,
    out: Path | None,
    cache: MediaCache | None,
) -> Path:
    """Run ``produce(tmp)`` and move the file to ``out``, or into the cache when ``out`` is None.

    Either way the file appears complete or not at all: ``produce`` writes a temporary file in
    the destination folder (so the final rename is atomic), which is removed if anything fails.
    """
    if out is None:
        # Loaded only for a cached result: writing to ``out`` (the soundtrack's usual path)
        # needs no lock nor cache folders.
        from omnilab.media.cache import MediaCache

        store = cache if cache is not None else MediaCache.default()
        return store.get_or_create(store.key(source, op, params), suffix, produce)
    dest = Path(out).expanduser()
    dest.parent.mkdir(parents=True, exist_ok=True)
    # The suffix stays last so encoders that pick a format from the name still can.
    tmp = dest.with_name(f".{dest.name}.tmp-{uuid.uuid4().hex}{dest.suffix}")
    try:
        produce(tmp)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _validated(path: str | Path, start: float, end: float | None) -> tuple[MediaInfo, float, float]:
    info = probe(path)
    require_audio(info)
    s, e = check_time_range(
        info,
        start,
        end,
        max_seconds=get_settings().media.max_audio_seconds,
        limit_setting="OMNILAB_MEDIA__MAX_AUDIO_SECONDS",
    )
    return info, s, e


def _mono(info: MediaInfo, start: float, end: float, rate: int) -> NDArray[np.float32]:
    # numpy loads with the first float samples, not with this module (see _float_audio).
    from omnilab.media._float_audio import mono_samples

    count = round((end - start) * rate)
    with decode_slot(gil_bound=True):
        try:
            return mono_samples(count, iter_bulk(info, start, end, rate=rate, layout="mono"))
        except IrregularError:  # filled again from the start, by the exact loop
            return mono_samples(count, iter_audio(info, start, end, rate=rate, layout="mono"))


def _write_wav(dest: Path, rate: int, blocks: Iterator[NDArray[np.float32]]) -> None:
    """Mono PCM16 ``dest`` (replaced if it exists) from float blocks.

    Written a block (about a second) at a time: a 30-minute soundtrack never sits in memory as
    float samples (115 MB, plus as much again for the conversion). The same operations per
    sample as on the whole array, so the file is the same.
    """
    from omnilab.media._float_audio import to_pcm16  # numpy: see _mono

    _write_pcm16(dest, rate, map(to_pcm16, blocks))


def _write_pcm16(dest: Path, rate: int, blocks: Iterator[bytes | memoryview]) -> None:
    """Mono PCM16 ``dest`` (replaced if it exists) from blocks of samples."""
    with wave.open(str(dest), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        for block in blocks:
            # Raw: ``writeframes`` rewrites the header after every block (1,800 seeks and
            # writes for 30 minutes); ``close`` writes the same final header once.
            w.writeframesraw(block)


def iter_audio(
    info: MediaInfo, start: float, end: float, *, rate: int, layout: str
) -> Iterator[NDArray[np.float32]]:
    """Yield planar float32 blocks (channels x n) of the validated range ``[start, end)``.

    The blocks hold exactly ``round((end - start) * rate)`` samples in all, resampled to
    ``rate`` and mixed to ``layout`` ("mono", "stereo", ...). Where the sound track has no
    data (before it starts, in gaps between timestamps, after it ends while the other tracks
    go on) the result is silence; a file whose data stops before ``end`` raises ``CORRUPT``.
    """
    from omnilab.media._float_audio import FloatWindow  # numpy: see _mono

    window = FloatWindow(round(start * rate), round((end - start) * rate), round(JITTER_S * rate))
    longest = 0  # samples of the longest source frame, converted to ``rate``
    resampler: av.AudioResampler | None = None
    params: tuple[str, str, int] | None = None

    def resampled(frame: av.AudioFrame | None) -> Iterator[NDArray[np.float32]]:
        nonlocal resampler, params
        if frame is None:  # the end: what the resampler still holds
            if resampler is not None:
                yield from window.push_all(resampler.resample(None), info)
            return
        current = (frame.format.name, frame.layout.name, frame.sample_rate)
        if resampler is None or current != params:
            # A track may change rate or channels midway; a resampler has fixed input.
            yield from resampled(None)
            resampler = av.AudioResampler(
                format="fltp", layout=layout, rate=rate, options=MIX_OPTIONS
            )
            params = current
        yield from window.push_all(resampler.resample(frame), info)

    with open_input(info.path) as container:
        stream = container.streams.audio[0]
        only_read(container, stream)
        seeked = seek_before(container, stream, info, start - PREROLL_S)
        batch = _Batch()
        # Only the sound track is demuxed: the other tracks' packets are skipped unread.
        for packet in container.demux(stream):
            for frame in stream.decode(packet):
                longest = max(longest, -(-frame.samples * rate // frame.sample_rate))
                if window.pos is None:
                    # Where the track begins after ``start``, the gap is pushed as silence.
                    at = round(first_time(info, stream, frame, start, seeked) * rate)
                    window.pos = min(at, window.first)
                if not batch.fits(frame):
                    yield from resampled(batch.take())
                    if window.done:
                        return
                batch.add(frame)
        yield from resampled(batch.take())
        yield from resampled(None)
    audio_end = None if window.pos is None else window.pos / rate
    window.pos = max(window.pos or 0, window.first)
    shortfall = window.stop - window.pos
    # The last packet is often shorter than the container's rounded duration says; a sound
    # track that ends before the other tracks do is silence, not damage (read only then).
    if shortfall > longest + window.jitter and _others_end(info, start) + end_tolerance(info) < end:
        ends = "has no decodable audio" if audio_end is None else f"ends at {fmt_s(audio_end)}"
        raise MediaError(
            MediaErrorCode.CORRUPT,
            f"{info.path.name} is damaged or truncated: its sound {ends}, "
            f"before the requested end {fmt_s(end)}",
            path=info.path,
        )
    yield from window.silence(shortfall, len(av.AudioLayout(layout).channels))


class _Batch:
    """Joins consecutive decoded frames of one format into one frame of about a second.

    Resampling and placing frames one by one cost more than decoding them (60 s of AAC is
    2,600 frames: 0.7 s of mostly per-frame Python work against 0.06 s of decoding). A joined
    frame holds the same samples at the first one's timestamp, and frames join only where the
    window would have put them next to each other anyway (within ``JITTER_S``), so the
    result is unchanged.
    """

    def __init__(self) -> None:
        self.first: av.AudioFrame | None = None
        # The samples of a batch of two or more frames, joined in C as they arrive (copying
        # each frame's planes from Python cost more than decoding it).
        self.fifo: av.AudioFifo | None = None
        self.first_pts: int | None = None
        self.samples = 0
        self.params: tuple[str, str, int] = ("", "", 0)
        self.tb: float | None = None  # seconds per timestamp unit
        self.next_pts: float | None = None  # where the last frame ends, in timestamp units

    def fits(self, frame: av.AudioFrame) -> bool:
        """Whether ``frame`` continues the batch (true for the first frame)."""
        first = self.first
        if first is None:
            return True
        if self.samples >= first.sample_rate or self.next_pts is None or frame.pts is None:
            return False
        # Not the time base: every frame comes from one stream's decoder, which keeps one (and
        # reading it builds a Fraction per frame, a tenth of a soundtrack's extraction time).
        if self.tb is None:
            return False
        if (frame.format.name, frame.layout.name, frame.sample_rate) != self.params:
            return False
        return abs(frame.pts - self.next_pts) * self.tb <= JITTER_S

    def add(self, frame: av.AudioFrame) -> None:
        """Append ``frame`` (one that :meth:`fits`)."""
        pts = frame.pts
        if self.first is None:
            self.params = (frame.format.name, frame.layout.name, frame.sample_rate)
            self.tb = float(frame.time_base) if frame.time_base else None
            self.first, self.first_pts = frame, pts
        else:
            if self.fifo is None:
                self.fifo = av.AudioFifo()
                self._push(self.first)
            self._push(frame)
        self.samples += frame.samples
        if pts is None or self.tb is None:
            self.next_pts = None
        else:
            self.next_pts = pts + frame.samples / frame.sample_rate / self.tb

    def _push(self, frame: av.AudioFrame) -> None:
        assert self.fifo is not None
        # The FIFO checks timestamps counted from zero; the batch keeps its own (``first_pts``).
        frame.pts = None
        self.fifo.write(frame)

    def take(self) -> av.AudioFrame | None:
        """The frames added so far as one (None if there are none); the batch starts empty."""
        first, fifo, pts = self.first, self.fifo, self.first_pts
        self.first, self.fifo, self.first_pts = None, None, None
        self.samples, self.next_pts = 0, None
        if first is None or fifo is None:
            return first
        joined = fifo.read()
        assert joined is not None
        joined.sample_rate = first.sample_rate
        joined.time_base = first.time_base
        joined.pts = pts
        return joined


def _others_end(info: MediaInfo, start: float) -> float:
    """Where the tracks other than the sound end (demuxing from ``start`` to the end)."""
    end = 0.0
    with open_input(info.path) as container:
        stream = container.streams.audio[0]
        seek_before(container, stream, info, start - PREROLL_S)
        for packet in container.demux():
            if packet.stream.index != stream.index:
                end = max(end, _packet_end(packet, info))
    return end


def _packet_end(packet: av.Packet[Any], info: MediaInfo) -> float:
    if packet.pts is None or packet.time_base is None:
        return 0.0
    return float((packet.pts + (packet.duration or 0)) * packet.time_base) - info.start_time


def seek_before(
    container: av.container.InputContainer, stream: av.stream.Stream, info: MediaInfo, t: float
) -> bool:
    """Seek ``stream`` to the last keyframe at or before timeline time ``t``.

    Returns False when decoding starts at the beginning instead (``t <= 0``, or the file cannot
    seek: decoding from the start is slower but just as exact).
    """
    if t <= 0 or stream.time_base is None:
        return False
    try:
        container.seek(int((t + info.start_time) / stream.time_base), stream=stream, backward=True)
    except av.FFmpegError:
        container.seek(0)
        return False
    return True
