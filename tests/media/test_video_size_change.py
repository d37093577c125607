"""Issue 42's reviewer on reproduction 12: the video pixel limit is checked on the stream's
header, but an H.264 stream may change its picture size later (a new SPS). A 210 KB MPEG-TS file
whose header says 64x64 and whose last seconds are 8192x8192 took ``omnilab media frames --num
3`` to 1.2 GB. The decoder itself now refuses pictures over the limit (FFmpeg's ``max_pixels``)."""

from __future__ import annotations

import fractions
from pathlib import Path
from typing import Any

import av
import pytest

from omnilab.media import MediaError, frames, probe

SMALL, HUGE = 64, 8192


def _picture(side: int) -> av.VideoFrame:
    picture = av.VideoFrame(side, side, "yuv420p")
    for plane, value in zip(picture.planes, (16, 128, 128), strict=True):
        plane.update(bytes([value]) * plane.buffer_size)
    return picture


@pytest.fixture(scope="module")
def size_change(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve 64x64 seconds, then two 8192x8192 pictures, in one H.264 stream (MPEG-TS)."""
    path = tmp_path_factory.mktemp("switch") / "switch.ts"
    second = fractions.Fraction(1, 1)
    with av.open(str(path), "w", format="mpegts") as out:
        stream = out.add_stream("libx264", rate=1)
        stream.width = stream.height = SMALL
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "51"}
        for pts in range(12):
            small = _picture(SMALL)
            small.pts, small.time_base = pts, second
            for packet in stream.encode(small):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
        big = av.CodecContext.create("libx264", "w")
        big.width = big.height = HUGE
        big.pix_fmt, big.time_base, big.framerate = "yuv420p", second, 1
        big.options = {"preset": "ultrafast", "crf": "51"}
        huge = _picture(HUGE)
        for pts in range(2):
            huge.pts, huge.time_base = pts, second
            packets = [*big.encode(huge), *(big.encode(None) if pts == 1 else [])]
            for packet in packets:
                packet.stream = stream
                packet.pts, packet.dts = packet.pts + 12, packet.dts + 12
                packet.time_base = second
                out.mux(packet)
    assert path.stat().st_size < 400_000
    return path


@pytest.mark.slow
def test_a_picture_size_change_mid_stream_is_refused_by_the_decoder(
    size_change: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = probe(size_change)
    assert (info.width, info.height) == (SMALL, SMALL)  # the header passes the check
    sizes: list[tuple[int, int]] = []
    real = av.VideoFrame.reformat

    def spy(self: av.VideoFrame, *args: Any, **kwargs: Any) -> av.VideoFrame:
        sizes.append((self.width, self.height))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(av.VideoFrame, "reformat", spy)
    with pytest.raises(MediaError) as refused:
        frames(size_change, num=3)
    assert "\n" not in refused.value.message
    assert (HUGE, HUGE) not in sizes
