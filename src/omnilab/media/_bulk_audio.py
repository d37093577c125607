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
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np
from av.filter import Graph
from numpy.typing import NDArray

from omnilab.media._open import _FD_DIR, only_read, open_bytes, open_input
from omnilab.media._timeline import JITTER_S, MIX_OPTIONS, PREROLL_S, Window, first_time
from omnilab.media.probe import MediaInfo

__all__ = ["IrregularError", "iter_bulk"]


class IrregularError(Exception):
    """The bulk path met something that only the exact per-packet loop places correctly."""


def iter_bulk(
    info: MediaInfo, start: float, end: float, *, rate: int, layout: str
) -> Iterator[NDArray[np.float32]]:
    """Yield what :func:`~omnilab.media.audio.iter_audio` yields for the same arguments.

    Raises :class:`IrregularError` (possibly after some blocks) where it cannot vouch for that; the
    caller then discards what it got and uses ``iter_audio``. Other errors (a file that cannot
    be opened, no audio at ``start``) are the :class:`MediaError` that ``iter_audio`` raises.
    """
    if start - PREROLL_S > 0:
        raise IrregularError("the range needs a seek")
    place, longest = _first_frame(info, start, rate)
    window = Window(round(start * rate), round((end - start) * rate), round(JITTER_S * rate))
    window.pos = min(place, window.first)
    with open_bytes(info.path) as held:
        name = f"{_FD_DIR}/{held.fileno()}"
        if not Path(name).exists():
            raise IrregularError(f"{_FD_DIR} is not available")
        try:
            graph = _graph(name, rate, layout)
            while not window.done:
                try:
                    block = graph.pull()
                except EOFError:
                    break
                if not isinstance(block, av.AudioFrame):
                    raise IrregularError("the graph gave no audio")
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


def _graph(name: str, rate: int, layout: str) -> Graph:
    """``amovie`` (the first sound track of ``name``) -> resampling -> a sink of 1 s blocks."""
    graph = Graph()
    source = graph.add("amovie", filename=name, streams="a:0")
    resample = graph.add("aresample", **MIX_OPTIONS)
    convert = graph.add(
        "aformat", sample_rates=str(rate), sample_fmts="fltp", channel_layouts=layout
    )
    sink = graph.add("abuffersink")
    source.link_to(resample)
    resample.link_to(convert)
    convert.link_to(sink)
    graph.configure()
    graph.set_audio_frame_size(rate)
    return graph


def _timeline_index(frame: av.AudioFrame, info: MediaInfo, rate: int) -> int | None:
    if frame.pts is None or frame.time_base is None:
        return None
    return round((float(frame.pts * frame.time_base) - info.start_time) * rate)
