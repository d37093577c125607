"""Float samples with numpy: the window of float blocks, a mono buffer, and the PCM16 conversion.

Loaded only where float samples are made (:func:`omnilab.media.audio.audio_samples`, the exact
per-packet loop, clips): a soundtrack written to a WAV file from its start gets PCM16 from
FFmpeg's graph (:mod:`omnilab.media._bulk_audio`) and never imports numpy (~0.1 s of CPU).
"""

from __future__ import annotations

from collections.abc import Iterator

import av
import numpy as np
from numpy.typing import NDArray

from omnilab.media._timeline import Window

__all__ = ["FloatWindow", "mono_samples", "to_pcm16"]


class FloatWindow(Window[NDArray[np.float32]]):
    """Planar float32 blocks (channels x n)."""

    def samples(self, frame: av.AudioFrame) -> NDArray[np.float32]:
        return frame.to_ndarray().astype(np.float32, copy=False)

    def size(self, block: NDArray[np.float32]) -> int:
        return int(block.shape[1])

    def cut(self, block: NDArray[np.float32], lo: int, hi: int) -> NDArray[np.float32]:
        return block[:, lo:hi]

    def zeros(self, channels: int, count: int) -> NDArray[np.float32]:
        return np.zeros((channels, count), dtype=np.float32)


def mono_samples(count: int, blocks: Iterator[NDArray[np.float32]]) -> NDArray[np.float32]:
    """The first channel of ``blocks`` (``count`` samples in all), clipped to [-1, 1]."""
    samples = np.empty(count, dtype=np.float32)
    pos = 0
    for block in blocks:
        samples[pos : pos + block.shape[1]] = block[0]
        pos += block.shape[1]
    # Lossy decoders overshoot full scale slightly; callers are promised [-1, 1].
    return np.clip(samples, -1.0, 1.0, out=samples)


def to_pcm16(block: NDArray[np.float32]) -> bytes:
    """The first channel of ``block`` as PCM16: clip to [-1, 1], times 32767, round half to
    even (as ``np.round``). :data:`omnilab.media._bulk_audio.PCM16_FILTERS` is the same
    conversion inside FFmpeg, byte for byte. In the machine's byte order, as FFmpeg's ``s16``
    and as ``wave`` expects (it writes the file little-endian)."""
    # In place on one copy.
    mono = np.clip(block[0], -1.0, 1.0)
    np.multiply(mono, np.float32(32767.0), out=mono)
    np.rint(mono, out=mono)
    return bytes(mono.astype(np.int16).tobytes())
