"""Synthetic media with content that can be read back: for the demo, tests and benchmarks.

Every video frame carries its own index as a row of black/white blocks (:func:`read_index`
recovers it even after compression and resizing), and every second of audio carries a tone whose
frequency is :func:`tone_freq` of that second (:func:`dominant_frequency` recovers it).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageDraw, ImageFont

__all__ = [
    "INDEX_BITS",
    "dominant_frequency",
    "index_pattern",
    "make_audio",
    "make_image",
    "make_video",
    "read_index",
    "tone_freq",
]

INDEX_BITS = 16
"""Bits of frame index drawn on each frame (indices wrap past 65535)."""

# Codecs per container: what a real file of that kind usually holds, all in the PyAV wheel.
_VIDEO_CODECS = {".mp4": "libx264", ".mov": "libx264", ".mkv": "libx264", ".webm": "libvpx-vp9"}
_AUDIO_CODECS = {
    ".mp4": "aac",
    ".mov": "aac",
    ".mkv": "aac",
    ".webm": "libopus",
    ".wav": "pcm_s16le",
    ".mp3": "libmp3lame",
    ".flac": "flac",
    ".m4a": "aac",
    ".ogg": "libopus",
}
_OPUS_RATE = 48_000  # Opus only encodes at 48 kHz.


def tone_freq(second: int) -> float:
    """Frequency (Hz) of the test tone during whole second ``second`` of generated audio."""
    return 400.0 + 100.0 * (second % 16)


def index_pattern(
    index: int, width: int, height: int, *, text: str | None = None
) -> NDArray[np.uint8]:
    """An RGB frame showing ``index`` as :data:`INDEX_BITS` blocks across the top third."""
    frame = np.empty((height, width, 3), dtype=np.uint8)
    # A slowly changing background makes consecutive frames differ like real footage does.
    frame[:] = (40 + (index * 7) % 160, 60, 90)
    band = height // 3
    for bit in range(INDEX_BITS):
        x0, x1 = bit * width // INDEX_BITS, (bit + 1) * width // INDEX_BITS
        frame[:band, x0:x1] = 255 if (index >> bit) & 1 else 0
    if text:
        image = Image.fromarray(frame)
        draw = ImageDraw.Draw(image)
        font = ImageFont.load_default(size=max(12, height // 8))
        draw.text((width // 20, band + height // 8), text, fill=(255, 255, 255), font=font)
        frame = np.asarray(image, dtype=np.uint8).copy()
    return frame


def read_index(image: Image.Image) -> int:
    """Recover the index drawn by :func:`index_pattern` from a decoded (possibly resized) frame."""
    gray = np.asarray(image.convert("L"), dtype=np.float32)
    height, width = gray.shape
    band = gray[height // 12 : height // 4]  # the middle of the block band, away from edges
    value = 0
    for bit in range(INDEX_BITS):
        x0, x1 = bit * width // INDEX_BITS, (bit + 1) * width // INDEX_BITS
        inner = band[:, x0 + (x1 - x0) // 4 : x1 - (x1 - x0) // 4]
        if float(inner.mean()) > 127.0:
            value |= 1 << bit
    return value


def dominant_frequency(samples: NDArray[np.floating], sample_rate: int) -> float:
    """Frequency (Hz) of the strongest spectral peak of mono ``samples``."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        return 0.0
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    freqs = np.fft.rfftfreq(x.size, d=1.0 / sample_rate)
    return float(freqs[int(np.argmax(spectrum))])


def _tone_block(
    start_sample: int, count: int, sample_rate: int, freq: Callable[[int], float]
) -> NDArray[np.float32]:
    t = (start_sample + np.arange(count)) / sample_rate
    seconds = np.floor(t).astype(np.int64)
    # Phase is accumulated per second so each second is a clean tone of its own frequency.
    freqs = np.array([freq(int(s)) for s in seconds])
    return (0.4 * np.sin(2 * np.pi * freqs * (t - seconds))).astype(np.float32)


def _add_audio_stream(
    container: av.container.OutputContainer, codec: str, sample_rate: int, channels: int
) -> av.audio.stream.AudioStream:
    rate = _OPUS_RATE if codec == "libopus" else sample_rate
    stream = container.add_stream(codec, rate=rate, layout="mono" if channels == 1 else "stereo")
    assert isinstance(stream, av.audio.stream.AudioStream)
    return stream


def _mux_audio(
    container: av.container.OutputContainer,
    stream: av.audio.stream.AudioStream,
    duration: float,
    channels: int,
    freq: Callable[[int], float],
    *,
    until: float | None = None,
    state: dict[str, int],
) -> None:
    """Encode audio up to ``until`` seconds (all of it when None), continuing from ``state``."""
    rate = stream.codec_context.sample_rate
    total = round(duration * rate)
    stop = total if until is None else min(total, round(until * rate))
    block = 1024
    while state["pos"] < stop:
        n = min(block, stop - state["pos"])
        mono = _tone_block(state["pos"], n, rate, freq)
        planar = np.tile(mono, (channels, 1))
        frame = av.AudioFrame.from_ndarray(planar, format="fltp", layout=stream.layout.name)
        frame.sample_rate = rate
        frame.pts = state["pos"]
        frame.time_base = Fraction(1, rate)
        for packet in stream.encode(frame):
            container.mux(packet)
        state["pos"] += n
    if until is None:
        for packet in stream.encode(None):
            container.mux(packet)


def make_video(
    path: str | Path,
    *,
    duration: float = 4.0,
    fps: int = 25,
    size: tuple[int, int] = (320, 240),
    gop_seconds: float = 1.0,
    audio: bool = True,
    sample_rate: int = 44_100,
    channels: int = 1,
    rotation: int = 0,
    text: str | None = None,
    preset: str = "veryfast",
    freq: Callable[[int], float] = tone_freq,
    codec: str | None = None,
) -> Path:
    """Write a video whose frames show their index and whose audio plays :func:`tone_freq`.

    ``codec`` overrides the encoder the file name implies (``libx265`` for HEVC in MP4).

    ``rotation`` stores a display rotation (degrees) in the stream, as phones do.
    ``text`` is drawn on every frame (for OCR tests and the demo).
    """
    out = Path(path)
    ext = out.suffix.lower()
    width, height = size
    with av.open(str(out), mode="w") as container:
        vcodec = codec or _VIDEO_CODECS.get(ext, "libx264")
        vs = container.add_stream(vcodec, rate=fps)
        assert isinstance(vs, av.video.stream.VideoStream)
        vs.width, vs.height, vs.pix_fmt = width, height, "yuv420p"
        vs.codec_context.gop_size = max(1, round(gop_seconds * fps))
        if vcodec == "libx264":
            # scenecut off: keyframes land exactly every GOP, which the seek benchmark relies on.
            vs.codec_context.options = {"preset": preset, "x264-params": "scenecut=0"}
        elif vcodec == "libx265":
            vs.codec_context.options = {
                "preset": preset,
                "x265-params": "log-level=error:scenecut=0:bframes=3",
            }
        if rotation:
            vs.set_display_rotation(rotation)
        astream = None
        if audio:
            acodec = _AUDIO_CODECS.get(ext, "aac")
            astream = _add_audio_stream(container, acodec, sample_rate, channels)
        state = {"pos": 0}
        n_frames = round(duration * fps)
        for i in range(n_frames):
            pixels = index_pattern(i, width, height, text=text)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            for packet in vs.encode(frame):
                container.mux(packet)
            if astream is not None:
                _mux_audio(
                    container, astream, duration, channels, freq, until=(i + 1) / fps, state=state
                )
        for packet in vs.encode(None):
            container.mux(packet)
        if astream is not None:
            _mux_audio(container, astream, duration, channels, freq, state=state)
    return out


def make_audio(
    path: str | Path,
    *,
    duration: float = 4.0,
    sample_rate: int = 44_100,
    channels: int = 1,
    freq: Callable[[int], float] = tone_freq,
) -> Path:
    """Write an audio-only file (format from the extension) playing :func:`tone_freq`."""
    out = Path(path)
    codec = _AUDIO_CODECS.get(out.suffix.lower(), "pcm_s16le")
    with av.open(str(out), mode="w") as container:
        stream = _add_audio_stream(container, codec, sample_rate, channels)
        _mux_audio(container, stream, duration, channels, freq, state={"pos": 0})
    return out


def make_image(
    path: str | Path,
    *,
    size: tuple[int, int] = (320, 240),
    exif_orientation: int | None = None,
    text: str | None = None,
    index: int = 0,
) -> Path:
    """Write an image showing ``index`` like a video frame, optionally with an EXIF orientation.

    The pixels are stored as given; a viewer that honours the tag shows them turned.
    """
    out = Path(path)
    image = Image.fromarray(index_pattern(index, size[0], size[1], text=text))
    exif = Image.Exif()
    if exif_orientation is not None:
        exif[0x0112] = exif_orientation
    image.save(out, exif=exif, quality=95)
    return out
