"""Clip cutting: a frame-exact, re-encoded MP4 (H.264 + AAC) of a time range of a video.

A stream copy could only cut at keyframes, so the range is decoded and encoded again. Video
frames are kept by the *nearest frame* rule: frame ``i`` at time ``t_i`` is in ``[start, end)``
when ``start - d/2 <= t_i < end - d/2`` (``d`` the frame duration), so the first frame of the clip
is ``round(start * fps)`` and the frame at clip time ``t`` is ``round((start + t) * fps)`` (a
time exactly between two frames takes the earlier one, where Python's ``round`` is even). The
first frame is placed at 0 and the others keep their spacing, so the video is off the exact
audio range (see :mod:`omnilab.media.audio`) by at most half a frame; both tracks start at 0.

Rotation is applied to the pixels: a phone video stored sideways with a display rotation is
written upright with no rotation tag, so players, frame extractors and models that ignore the
display matrix all see the same picture, and ``max_edge`` applies to the displayed size.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from omnilab.config import get_settings
from omnilab.media import _smartcut as smartcut
from omnilab.media._open import open_input
from omnilab.media._validate import check_time_range, require_video
from omnilab.media.audio import iter_audio, seek_before, write_output
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.probe import MediaInfo, _is_cover_art, probe

__all__ = ["clip"]

# "veryfast" encodes several times faster than the default "medium" at a modest size cost;
# clips are intermediate files for models and viewers, where speed matters more than bytes.
_X264_OPTIONS = {"preset": "veryfast", "crf": "23"}
# Sample rates the AAC encoder accepts; anything else is resampled to 48 kHz.
_AAC_RATES = frozenset(
    (7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000)
)
_AAC_FRAME = 1024
# The MPEG clock: fine enough for any frame rate, and what MP4 muxers expect.
_TIME_BASE = Fraction(1, 90_000)
# 2: smart cut (whole GOPs copied) where the source allows it.
_CACHE_VERSION = 2

# (clip time, track: 0 video / 1 audio, frame): tracks are merged into one stream by time.
_Item = tuple[float, int, av.VideoFrame | av.AudioFrame]


def clip(
    path: str | Path,
    start: float,
    end: float,
    *,
    out: Path | None = None,
    cache: MediaCache | None = None,
    max_edge: int | None = None,
    preset: str | None = None,
    crf: int | None = None,
    smart_cut: bool = True,
) -> Path:
    """Cut ``[start, end)`` seconds of a video into an MP4 (H.264 yuv420p + AAC) starting at 0.

    ``max_edge`` shrinks the picture so its longest displayed edge is at most that many pixels
    (never enlarges); dimensions are rounded to even numbers, as yuv420p requires. Without
    ``out`` the clip lives in the media cache (``MediaCache.default()`` unless ``cache`` is
    given); with ``out`` it is written there atomically. A video without sound gives a clip
    without sound. ``preset`` and ``crf`` override x264's (default ``veryfast``, 23; OmniAgent's
    environment uses ``superfast``, 20). Raises :class:`MediaError` (``NO_VIDEO_STREAM`` for
    audio files and images).
    """
    if max_edge is not None and max_edge < 2:
        raise ValueError(f"max_edge must be at least 2 pixels (got {max_edge})")
    info = probe(path)
    _require_video(info)
    s, e = check_time_range(
        info,
        start,
        end,
        max_seconds=get_settings().media.max_clip_seconds,
        limit_setting="OMNILAB_MEDIA__MAX_CLIP_SECONDS",
    )
    size = _output_size(info, max_edge)
    x264 = dict(_X264_OPTIONS)
    if preset is not None:
        x264["preset"] = preset
    if crf is not None:
        x264["crf"] = str(crf)

    # Copying whole GOPs needs the source's own size (the copied pictures are not scaled).
    smart = smart_cut and size == (info.width, info.height)

    def produce(dest: Path) -> None:
        if smart:
            try:
                if _encode_smart(info, s, e, dest, x264):
                    _check_output(info, s, e, dest)
                    return
            except MediaError:
                pass  # damage near the cut: the whole encode decides what to report
        _encode(info, s, e, size, dest, x264)
        _check_output(info, s, e, dest)

    params: dict[str, object] = {"start": s, "end": e, "size": size, "v": _CACHE_VERSION}
    if x264 != _X264_OPTIONS:  # default clips keep their cache keys
        params["x264"] = x264
    if not smart_cut:
        params["smart_cut"] = False
    return write_output(info.path, "clip", params, ".mp4", produce, out=out, cache=cache)


def _require_video(info: MediaInfo) -> None:
    try:
        require_video(info)
    except MediaError as err:
        if not info.has_audio:
            raise
        raise MediaError(
            err.code, f"{err.message}; use audio_segment to cut its audio", path=info.path
        ) from None


def _even(x: float) -> int:
    return max(2, 2 * round(x / 2))


def _output_size(info: MediaInfo, max_edge: int | None) -> tuple[int, int]:
    """Displayed (upright) size, shrunk to ``max_edge`` and rounded to even numbers."""
    if info.width is None or info.height is None:
        raise MediaError(
            MediaErrorCode.CORRUPT, f"{info.path.name} has no known picture size", path=info.path
        )
    w, h = info.width, info.height
    scale = min(1.0, max_edge / max(w, h)) if max_edge is not None else 1.0
    return _even(w * scale), _even(h * scale)


def _encode(
    info: MediaInfo,
    start: float,
    end: float,
    size: tuple[int, int],
    dest: Path,
    x264: dict[str, str],
) -> None:
    # The nominal rate only guides x264's rate control; frame times come from the source.
    fps = Fraction(info.fps).limit_denominator(1001) if info.fps else Fraction(25)
    with av.open(str(dest), mode="w", format="mp4", options={"movflags": "+faststart"}) as out:
        vout = out.add_stream("libx264", rate=fps)
        assert isinstance(vout, av.video.stream.VideoStream)
        vout.width, vout.height = size
        vout.pix_fmt = "yuv420p"
        vout.codec_context.time_base = _TIME_BASE
        # PyAV opens codecs with thread_count=0 (auto): x264 runs its own frame threads, and the
        # source decoder is set to frame+slice threading in _video_items.
        vout.codec_context.options = dict(x264)
        tracks: list[Iterator[_Item]] = [_video_items(info, start, end, size)]
        aout: av.audio.stream.AudioStream | None = None
        if info.has_audio:
            rate, layout = _audio_params(info)
            stream = out.add_stream("aac", rate=rate, layout=layout)
            assert isinstance(stream, av.audio.stream.AudioStream)
            aout = stream
            tracks.append(_audio_items(info, start, end, rate, layout))
        # Merging by time interleaves the tracks in the file and keeps memory bounded.
        for _, _, frame in heapq.merge(*tracks, key=lambda item: (item[0], item[1])):
            if isinstance(frame, av.VideoFrame):
                out.mux(vout.encode(frame))
            elif aout is not None:
                out.mux(aout.encode(frame))
        out.mux(vout.encode(None))
        if aout is not None:
            out.mux(aout.encode(None))


def _encode_smart(
    info: MediaInfo, start: float, end: float, dest: Path, x264: dict[str, str]
) -> bool:
    """Write the clip by smart cut (see :mod:`omnilab.media._smartcut`); False where that
    does not apply (nothing is written then)."""
    fps = Fraction(info.fps).limit_denominator(1001) if info.fps else Fraction(25)
    frame_ticks = round(1 / (fps * _TIME_BASE))
    with open_input(info.path) as container:
        cut = smartcut.plan(container, info, start, end)
        if cut is None:
            return False
        vin = next(s for s in container.streams.video if not _is_cover_art(s))
        src_tb = vin.time_base
        assert src_tb is not None  # plan() checked

        def ticks(pts: int) -> int:
            return round((float(pts * src_tb) - info.start_time - cut.origin) / _TIME_BASE)

        # (pts, dts, packet) in clip ticks; the packet's own fields are set when muxed.
        copied: list[tuple[int, int, av.Packet[Any]]] = []
        for p in cut.packets:
            if p.dts is None or p.pts is None:
                return False
            q = av.Packet(smartcut.to_annexb(bytes(p), cut.length_size))
            q.duration = round(float((p.duration or 0) * src_tb) / _TIME_BASE) or frame_ticks
            q.is_keyframe = p.is_keyframe
            copied.append((ticks(p.pts), ticks(p.dts), q))
        # Encoded packets have no reordering delay (no B-frames); they take the copied ones'
        # (pts - dts), so decode times stay increasing across the joins.
        boundary, delay = (copied[0][0], copied[0][0] - copied[0][1]) if copied else (0, 0)
        size = (vin.width, vin.height)
        encoded = _encode_edges(info, start, end, cut, size, fps, x264, vin.sample_aspect_ratio)
        sps, pps, datas = smartcut.encoded_edges(encoded)
        head: list[tuple[int, int, av.Packet[Any]]] = []
        tail: list[tuple[int, int, av.Packet[Any]]] = []
        for packet, data in zip(encoded, datas, strict=True):
            pts = packet.pts or 0
            q = av.Packet(data)
            q.duration, q.is_keyframe = frame_ticks, packet.is_keyframe
            (head if pts < boundary else tail).append((pts, pts - delay, q))
        video = head + copied + tail
        if any(b[1] <= a[1] for a, b in itertools.pairwise(video)):
            return False  # reordering differs within the source: re-encode instead
        # The higher profile first: the avcC record takes its profile and level from it.
        all_sps = sorted([*sps, *cut.sps], key=lambda u: u[1], reverse=True)
        with av.open(str(dest), mode="w", format="mp4", options={"movflags": "+faststart"}) as out:
            vout = out.add_stream_from_template(vin)
            vout.codec_context.extradata = smartcut.annexb([*all_sps, *pps, *cut.pps])
            vout.time_base = _TIME_BASE
            aout: av.audio.stream.AudioStream | None = None
            audio: Iterator[_Item] = iter(())
            if info.has_audio:
                rate, layout = _audio_params(info)
                stream = out.add_stream("aac", rate=rate, layout=layout)
                assert isinstance(stream, av.audio.stream.AudioStream)
                aout = stream
                audio = _audio_items(info, start, end, rate, layout)
            # Interleaved by time: video by decode time, audio frames as they are encoded.
            pending = next(audio, None)
            for pts, dts, q in video:
                while aout is not None and pending is not None and pending[0] <= dts * _TIME_BASE:
                    out.mux(aout.encode(pending[2]))  # type: ignore[arg-type]
                    pending = next(audio, None)
                q.pts, q.dts, q.time_base, q.stream = pts, dts, _TIME_BASE, vout
                out.mux(q)
            while aout is not None and pending is not None:
                out.mux(aout.encode(pending[2]))  # type: ignore[arg-type]
                pending = next(audio, None)
            if aout is not None:
                out.mux(aout.encode(None))
    return True


def _encode_edges(
    info: MediaInfo,
    start: float,
    end: float,
    cut: smartcut.Cut,
    size: tuple[int, int],
    fps: Fraction,
    x264: dict[str, str],
    sar: Fraction | None,
) -> list[av.Packet[Any]]:
    """The head (frames before the first copied keyframe) and the tail (from the keyframe the
    copy stops before), encoded by one x264 whose parameter sets take ``cut.free_id``."""
    d = 1.0 / info.fps if info.fps else 0.04
    enc = av.CodecContext.create("libx264", "w")
    assert isinstance(enc, av.video.codeccontext.VideoCodecContext)
    enc.width, enc.height = size
    enc.pix_fmt = "yuv420p"
    enc.time_base = _TIME_BASE
    enc.framerate = fps
    if sar:
        enc.sample_aspect_ratio = sar  # as the copied pictures have it
    # No B-frames: decode order is display order, which keeps the joins simple.
    enc.options = {**x264, "x264-params": f"sps-id={cut.free_id}:bframes=0", "forced-idr": "1"}
    packets: list[av.Packet[Any]] = []
    parts: list[Iterator[_Item]] = []
    if cut.copy_from > cut.origin + d / 2:
        parts.append(_video_items(info, start, cut.copy_from + d / 2, size, origin=cut.origin))
    parts.append(
        _video_items(info, cut.copy_to, end, size, origin=cut.origin, seek_at=cut.copy_to + d / 2)
    )
    for i, part in enumerate(parts):
        for k, (_, _, frame) in enumerate(part):
            assert isinstance(frame, av.VideoFrame)
            if k == 0 and i > 0:
                frame.pict_type = av.video.frame.PictureType.I  # the tail starts with an IDR
            packets += enc.encode(frame)
    packets += enc.encode(None)
    return packets


def _audio_params(info: MediaInfo) -> tuple[int, str]:
    rate = info.sample_rate if info.sample_rate in _AAC_RATES else 48_000
    assert rate is not None
    # More than two channels are mixed to stereo: clips are for viewing and models, not mastering.
    return rate, "mono" if info.channels == 1 else "stereo"


def _audio_items(
    info: MediaInfo, start: float, end: float, rate: int, layout: str
) -> Iterator[_Item]:
    pos = 0
    for block in iter_audio(info, start, end, rate=rate, layout=layout):
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(block), format="fltp", layout=layout
        )
        frame.sample_rate = rate
        frame.time_base = Fraction(1, rate)
        frame.pts = pos
        yield pos / rate, 1, frame
        pos += block.shape[1]


def _video_items(
    info: MediaInfo,
    start: float,
    end: float,
    size: tuple[int, int],
    *,
    origin: float | None = None,
    seek_at: float | None = None,
) -> Iterator[_Item]:
    """Yield ``(clip time, 0, frame)`` for each kept frame, converted for the encoder.

    ``origin`` is the source time of clip time 0 (default: the first kept frame); ``seek_at``
    where to seek (default: one frame before ``start``, the keyframe before it is then used).
    """
    frame_s = 1.0 / info.fps if info.fps else 0.0
    eps = 1e-6
    with open_input(info.path) as container:
        vin = next(s for s in container.streams.video if not _is_cover_art(s))
        vin.thread_type = "AUTO"
        # Back to the keyframe at or before the first frame we need, then decode forward.
        seek_before(container, vin, info, start - frame_s if seek_at is None else seek_at)
        last_pts = -1
        for frame in container.decode(vin):
            if frame.pts is None or frame.time_base is None:
                continue  # no time, no place in the clip: decoders give these only when broken
            t = float(frame.pts * frame.time_base) - info.start_time
            if t < start - frame_s / 2 - eps:
                continue
            if origin is None:
                # The nearest frame to ``start`` goes to 0 and the rest keep their spacing, so
                # frame k of a constant-rate clip is at k / fps and video lags audio by at most
                # half a frame. A video track that really starts later keeps its offset.
                origin = t if t <= start + frame_s + eps else start
            if last_pts >= 0 and t >= end - frame_s / 2 - eps:
                return  # the first kept frame stays even in a range shorter than a frame
            pts = max(round((t - origin) / _TIME_BASE), last_pts + 1)
            last_pts = pts
            converted = _convert(frame, size, info.rotation)
            converted.pts = pts
            converted.time_base = _TIME_BASE
            yield float(pts * _TIME_BASE), 0, converted
    if last_pts < 0:
        raise MediaError(
            MediaErrorCode.CORRUPT,
            f"{info.path.name} is damaged: no video frame could be decoded at {fmt_s(start)}",
            path=info.path,
        )


def _convert(frame: av.VideoFrame, size: tuple[int, int], rotation: int) -> av.VideoFrame:
    """Scale to ``size`` (the upright size) and turn upright; yuv420p for the encoder."""
    width, height = size
    if rotation % 360 == 0:
        return frame.reformat(width=width, height=height, format="yuv420p", interpolation="AREA")
    # Scale before turning, so the rotation moves as few pixels as possible.
    sideways = rotation % 180 == 90
    rgb = frame.to_ndarray(
        width=height if sideways else width,
        height=width if sideways else height,
        format="rgb24",
        interpolation="AREA",
    )
    # ``rotation`` is counterclockwise, as np.rot90 turns (checked against FFmpeg's autorotate).
    upright = np.ascontiguousarray(np.rot90(rgb, k=rotation // 90), dtype=np.uint8)
    return av.VideoFrame.from_ndarray(upright, format="rgb24").reformat(format="yuv420p")


def _check_output(info: MediaInfo, start: float, end: float, dest: Path) -> None:
    """The written clip must last ``end - start`` within one video frame and one audio frame."""
    result = probe(dest)
    frame = 1.0 / info.fps if info.fps else 0.0
    audio_frame = _AAC_FRAME / _audio_params(info)[0] if info.has_audio else 0.0
    tolerance = frame + audio_frame + 1e-3
    duration = result.duration or 0.0
    if not result.has_video or abs(duration - (end - start)) > tolerance:
        raise MediaError(
            MediaErrorCode.CORRUPT,
            f"the clip {fmt_s(start)} to {fmt_s(end)} of {info.path.name} came out "
            f"{fmt_s(duration)} long instead of {fmt_s(end - start)} (damaged or truncated source)",
            path=info.path,
        )
