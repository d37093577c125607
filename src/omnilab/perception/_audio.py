"""Audio input of the perception operators: a file (its first audio stream) or samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.probe import probe

__all__ = ["SAMPLE_RATE", "AudioInput", "load_samples"]

SAMPLE_RATE = 16_000
"""Every perception operator works on mono float32 samples at this rate (what the models expect)."""

AudioInput = str | Path | NDArray[np.floating]
"""A media file with an audio stream (audio or video), or mono samples at :data:`SAMPLE_RATE`."""


def load_samples(source: AudioInput) -> NDArray[np.float32]:
    """Mono float32 samples at 16 kHz; raises ``MediaError(NO_AUDIO_STREAM)`` for silent files."""
    if isinstance(source, np.ndarray):
        samples = np.asarray(source, dtype=np.float32)
        if samples.ndim != 1:
            raise ValueError(f"audio samples must be one-dimensional (got shape {samples.shape})")
        return samples
    info = probe(source)
    if not info.has_audio:
        raise MediaError(
            MediaErrorCode.NO_AUDIO_STREAM,
            f"{info.path.name} has no audio stream ({info.kind.value} file)",
            path=info.path,
        )
    # Imported here: decoding machinery is loaded only by callers that decode.
    from omnilab.media.audio import audio_samples

    return np.asarray(audio_samples(info.path, sample_rate=SAMPLE_RATE), dtype=np.float32)
