"""A sound track from its beginning, demuxed, decoded and resampled in bulk inside FFmpeg.

:func:`omnilab.media.audio.iter_audio` hands every packet to Python: 77,000 iterations for the
AAC sound of a 30-minute video, which cost as much as FFmpeg's decoding itself. Here FFmpeg's
``amovie`` source filter reads the first sound track (it marks the other tracks discarded, so
an MP4's video samples are skipped unread), decodes it and feeds the same ``aresample`` ->
``aformat`` chain that PyAV's ``AudioResampler`` builds for ``iter_audio``; Python takes one
block of a second at a time. Resampling is a stream, so the samples are the same however the
input is cut into frames; blocks are placed on the timeline by the same :class:`Window`.

Only what the exact loop would place contiguously is taken here: a range that needs a seek
(starting more than :data:`PREROLL_S` in), a block whose timestamp is more than the jitter
away from where the previous one ended (a gap or an overlap in the track's timestamps), a sound
track ending before ``end`` by more than a frame, or any FFmpeg error raise :class:`IrregularError`,
and the caller starts again with ``iter_audio`` (which then says what is wrong, if anything).
A gap and an overlap that cancel out within one block would not be seen; no muxer writes that.

With ``pcm16=True`` (a soundtrack written to a WAV file) the graph also makes the PCM16 samples:
:data:`PCM16_FILTERS` clip, scale and round exactly as numpy does on the float samples
(:func:`omnilab.media._float_audio.to_pcm16`), so the file is the same byte for byte and
Python neither converts samples nor imports numpy.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar, overload

import av
from av.filter import Graph

from omnilab.media._open import _FD_DIR, only_read, open_bytes, open_input
from omnilab.media._timeline import (
    JITTER_S,
    MIX_OPTIONS,
    PREROLL_S,
    Pcm16Window,
    Window,
    first_time,
)
from omnilab.media.probe import MediaInfo

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["PCM16_FILTERS", "IrregularError", "iter_bulk"]

B = TypeVar("B")

# Float samples to PCM16 the way :func:`omnilab.media._float_audio.to_pcm16` does it in numpy:
# ``round_half_even(float32(clip(x, -1, 1) * 32767))``. ``asoftclip`` (hard) clips to [-1, 1]
# and multiplies by ``output`` as a float32, here 32767/32768 (exact in float32); swresample's
# float -> s16 then multiplies by 32768 (exact: a power of two) and rounds half to even
# (``lrintf``, or ``cvtps2dq`` in its SIMD code). Scaling by a power of two commutes with float32
# rounding, so each sample is numpy's to the bit: checked on every float32 from 2**-16 to 1.5 of
# both signs (276,824,066 values; smaller ones are 0 either way, larger ones clip) and kept
# so by tests/media/test_bulk_audio.py. A library whose filters differ fails the test.
PCM16_FILTERS: tuple[tuple[str, dict[str, str]], ...] = (
    ("asoftclip", {"type": "hard", "threshold": "1", "output": "0.999969482421875"}),
    ("aformat", {"sample_fmts": "s16"}),
)


class IrregularError(Exception):
    """The bulk path met something that only the exact per-packet loop places correctly."""


@overload
def iter_bulk(
    info: MediaInfo,
    start: float,
    end: float,
    *,
    rate: int,
    layout: str,
    pcm16: Literal[False] = False,
) -> Iterator[NDArray[np.float32]]: ...


@overload
def iter_bulk(
    info: MediaInfo,
    start: float,
    end: float,
    *,
    rate: int,
    layout: Literal["mono"],
    pcm16: Literal[True],
) -> Iterator[memoryview]: ...


def iter_bulk(
    info: MediaInfo, start: float, end: float, *, rate: int, layout: str, pcm16: bool = False
) -> Iterator[NDArray[np.float32]] | Iterator[memoryview]:
    """Yield what :func:`~omnilab.media.audio.iter_audio` yields for the same arguments.

    With ``pcm16`` (mono only) the blocks are those samples already converted to PCM16 by
    :func:`omnilab.media._float_audio.to_pcm16` (``memoryview`` of format ``h``).
    Raises :class:`IrregularError` (possibly after some blocks) where it cannot vouch for that; the
    caller then discards what it got and uses ``iter_audio``. Other errors (a file that cannot
    be opened, no audio at ``start``) are the :class:`MediaError` that ``iter_audio`` raises.
    """
    first, count, jitter = round(start * rate), round((end - start) * rate), round(JITTER_S * rate)
    if pcm16:
        if layout != "mono":
            raise ValueError(f"PCM16 blocks are mono (asked for {layout})")
        return _blocks(Pcm16Window(first, count, jitter), info, start, rate, layout, pcm16=True)
    # numpy and the float window load here, not with this module (see _float_audio).
    from omnilab.media._float_audio import FloatWindow

    return _blocks(FloatWindow(first, count, jitter), info, start, rate, layout, pcm16=False)


def _blocks(
    window: Window[B], info: MediaInfo, start: float, rate: int, layout: str, *, pcm16: bool
) -> Iterator[B]:
    if start - PREROLL_S > 0:
        raise IrregularError("the range needs a seek")
    place, longest = _first_frame(info, start, rate)
    window.pos = min(place, window.first)
    with open_bytes(info.path) as held:
        name = f"{_FD_DIR}/{held.fileno()}"
        if not Path(name).exists():
            raise IrregularError(f"{_FD_DIR} is not available")
        try:
            graph = _graph(name, rate, layout, pcm16=pcm16)
            while not window.done:
                try:
                    block = graph.pull()
                except EOFError:
                    break
                if not isinstance(block, av.AudioFrame):
                    raise IrregularError("the graph gave no audio")
                if pcm16 and block.format.name != "s16":
                    raise IrregularError(f"the graph gave {block.format.name}, not s16")
                at = _timeline_index(block, info, rate)
                if at is None or abs(at - window.pos) > window.jitter:
                    raise IrregularError(f"the timestamps jump near sample {window.pos}")
                yield from window.push(block, info)
        except av.FFmpegError as e:
            # EAGAIN included: a source-driven graph has nothing to wait for.
            reason = "EAGAIN" if e.errno == errno.EAGAIN else str(e)
            raise IrregularError(f"FFmpeg: {reason}") from e
    window.pos = max(window.pos, window.first)
    shortfall = window.stop - window.pos
    if shortfall > longest + window.jitter:
        raise IrregularError("the sound track ends early")
    yield from window.silence(shortfall, len(av.AudioLayout(layout).channels))


def _first_frame(info: MediaInfo, start: float, rate: int) -> tuple[int, int]:
    """Timeline index of the first decoded frame, and a frame's length, in output samples."""
    with open_input(info.path) as container:
        stream = container.streams.audio[0]
        only_read(container, stream)
        for packet in container.demux(stream):
            for frame in stream.decode(packet):
                at = round(first_time(info, stream, frame, start, False) * rate)
                size = max(frame.samples, stream.codec_context.frame_size or 0)
                return at, -(-size * rate // frame.sample_rate)
    raise IrregularError("no decodable audio")


def _graph(name: str, rate: int, layout: str, *, pcm16: bool) -> Graph:
    """``amovie`` (the first sound track of ``name``) -> resampling [-> PCM16] -> a sink of
    1 s blocks."""
    graph = Graph()
    chain = [
        graph.add("amovie", filename=name, streams="a:0"),
        graph.add("aresample", **MIX_OPTIONS),
        graph.add("aformat", sample_rates=str(rate), sample_fmts="fltp", channel_layouts=layout),
    ]
    if pcm16:
        # Joined into the sink's 1 s blocks first: converting the resampler's ~370-sample frames
        # one by one cost more (per-frame filter calls) than numpy converting 1 s blocks.
        try:
            chain.append(graph.add("asetnsamples", nb_out_samples=str(rate), pad="0"))
            chain += [graph.add(filter, **options) for filter, options in PCM16_FILTERS]
        except ValueError as e:  # an FFmpeg without these filters or options
            raise IrregularError(f"FFmpeg cannot convert to PCM16 here: {e}") from e
    chain.append(graph.add("abuffersink"))
    for a, b in pairwise(chain):
        a.link_to(b)
    graph.configure()
    graph.set_audio_frame_size(rate)
    return graph


def _timeline_index(frame: av.AudioFrame, info: MediaInfo, rate: int) -> int | None:
    if frame.pts is None or frame.time_base is None:
        return None
    return round((float(frame.pts * frame.time_base) - info.start_time) * rate)
