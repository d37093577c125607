"""Sample media with known content (slides with on-screen text over speech) for demos and tests.

:func:`make_talk` writes a video of full-screen "slides", each a plain background with one or
more lines of text, with an optional speech track laid under it: a file whose transcript, shot
boundaries and on-screen text are all known in advance, which is what the digest needs to be
shown and checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageDraw, ImageFont

__all__ = ["Slide", "make_talk", "render_slide"]

_RATE = 16_000


@dataclass(frozen=True)
class Slide:
    """``seconds`` of one still picture: ``text`` (lines split on ``\\n``) on ``background``."""

    text: str
    seconds: float
    background: tuple[int, int, int] = (20, 40, 90)
    foreground: tuple[int, int, int] = (255, 255, 255)


def render_slide(slide: Slide, size: tuple[int, int]) -> NDArray[np.uint8]:
    """The RGB picture of ``slide``: text centred, about a tenth of the height tall."""
    width, height = size
    image = Image.new("RGB", size, slide.background)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=max(14, height // 10))
    lines = slide.text.split("\n")
    line_h = int(font.size * 1.6) if isinstance(font, ImageFont.FreeTypeFont) else 16
    top = (height - line_h * len(lines)) // 2
    for i, line in enumerate(lines):
        w = draw.textlength(line, font=font)
        draw.text(((width - w) / 2, top + i * line_h), line, fill=slide.foreground, font=font)
    return np.asarray(image, dtype=np.uint8)


def make_talk(
    path: str | Path,
    slides: Sequence[Slide],
    *,
    speech: NDArray[np.floating] | None = None,
    speech_at: float = 0.0,
    size: tuple[int, int] = (640, 360),
    fps: int = 25,
) -> Path:
    """Write an H.264/AAC MP4 showing ``slides`` in turn, with ``speech`` starting at ``speech_at``.

    Args:
        path: Output file (``.mp4``).
        slides: The pictures and how long each is shown; cuts fall at their boundaries.
        speech: Mono samples at 16 kHz laid under the video (cut at its end); ``None``: no
            audio stream at all.
        speech_at: Second of the video at which the speech starts (silence before).
        size: Frame size in pixels.
        fps: Frames per second.
    """
    out = Path(path)
    total = sum(s.seconds for s in slides)
    track = None
    if speech is not None:
        track = np.zeros(round(total * _RATE), dtype=np.float32)
        begin = round(speech_at * _RATE)
        piece = np.asarray(speech, dtype=np.float32)[: max(0, track.size - begin)]
        track[begin : begin + piece.size] = piece
    with av.open(str(out), mode="w") as container:
        vs = container.add_stream("libx264", rate=fps)
        assert isinstance(vs, av.video.stream.VideoStream)
        vs.width, vs.height, vs.pix_fmt = size[0], size[1], "yuv420p"
        vs.codec_context.options = {"preset": "veryfast"}
        audio_stream = None
        if track is not None:
            audio_stream = container.add_stream("aac", rate=_RATE, layout="mono")
            assert isinstance(audio_stream, av.audio.stream.AudioStream)
        index = 0
        for slide in slides:
            pixels = render_slide(slide, size)
            for _ in range(round(slide.seconds * fps)):
                frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
                frame.pts, frame.time_base = index, Fraction(1, fps)
                container.mux(vs.encode(frame))
                index += 1
        container.mux(vs.encode(None))
        if audio_stream is not None and track is not None:
            _encode_audio(container, audio_stream, track)
    return out


def _encode_audio(
    container: av.container.OutputContainer,
    stream: av.audio.stream.AudioStream,
    track: NDArray[np.float32],
) -> None:
    block = 1024
    for pos in range(0, track.size, block):
        piece = track[pos : pos + block].reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(piece, format="fltp", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = _RATE, pos, Fraction(1, _RATE)
        container.mux(stream.encode(frame))
    container.mux(stream.encode(None))
