"""Voice activity detection with Silero VAD (v6) run on onnxruntime, without torch.

The ONNX model and its runner ship inside ``faster-whisper`` (``faster_whisper/assets``); the
model scores each 32 ms window (512 samples at 16 kHz) with a speech probability. Windows are
turned into segments with hysteresis: speech starts above ``threshold`` and ends only after
``min_silence`` seconds below ``threshold - 0.15``, so short pauses inside a sentence do not
split it.
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.perception._audio import SAMPLE_RATE, AudioInput, load_samples
from omnilab.perception.errors import missing_package
from omnilab.perception.types import SpeechSegment

__all__ = ["WINDOW", "WINDOW_SECONDS", "detect_speech", "segments_from_probs", "speech_probs"]

WINDOW = 512
"""Samples per VAD window at 16 kHz."""

WINDOW_SECONDS = WINDOW / SAMPLE_RATE


# A digest asks for the same samples' probabilities twice (speech pieces for ASR, then audio
# events); the last answer is kept while its (never modified) samples array is alive.
_last: tuple[weakref.ref[NDArray[np.float32]], NDArray[np.float32]] | None = None


def speech_probs(samples: NDArray[np.float32]) -> NDArray[np.float32]:
    """Speech probability of each 32 ms window of 16 kHz mono ``samples`` (last one zero-padded)."""
    global _last
    if samples.size == 0:
        return np.zeros(0, dtype=np.float32)
    if _last is not None and _last[0]() is samples:
        return _last[1]
    probs = _speech_probs(samples)
    probs.flags.writeable = False  # shared with later callers
    _last = (weakref.ref(samples), probs)
    return probs


def _speech_probs(samples: NDArray[np.float32]) -> NDArray[np.float32]:
    try:
        from faster_whisper.vad import get_vad_model
    except ImportError as e:
        raise missing_package("voice activity detection (Silero VAD)", "faster-whisper") from e
    padded = np.pad(samples.astype(np.float32), (0, (-samples.size) % WINDOW))
    # The model keeps its recurrent state across the whole call, so one call sees full context.
    probs = np.asarray(get_vad_model()(padded), dtype=np.float32).reshape(-1)
    return probs[: padded.size // WINDOW]


def segments_from_probs(
    probs: NDArray[np.float32],
    *,
    threshold: float = 0.5,
    min_speech: float = 0.25,
    min_silence: float = 0.3,
    pad: float = 0.1,
    duration: float | None = None,
) -> list[SpeechSegment]:
    """Turn per-window speech probabilities into padded speech segments (seconds).

    Args:
        probs: One probability per :data:`WINDOW_SECONDS` window.
        threshold: Probability at which speech starts.
        min_speech: Segments shorter than this are dropped (clicks, coughs).
        min_silence: A pause must last this long to end a segment.
        pad: Seconds added on each side (clipped to the audio and to neighbours).
        duration: Length of the audio, to clip the last segment; default the windows' end.
    """
    end_of_audio = probs.size * WINDOW_SECONDS if duration is None else duration
    low = max(threshold - 0.15, 0.01)
    spans: list[tuple[int, int]] = []
    start: int | None = None
    quiet_since: int | None = None
    silence_windows = max(1, round(min_silence / WINDOW_SECONDS))
    for i, p in enumerate(probs):
        if start is None:
            if p >= threshold:
                start, quiet_since = i, None
            continue
        if p >= threshold:
            quiet_since = None
        elif p < low and quiet_since is None:
            quiet_since = i
        if quiet_since is not None and i - quiet_since >= silence_windows:
            spans.append((start, quiet_since))
            start, quiet_since = None, None
    if start is not None:
        spans.append((start, quiet_since if quiet_since is not None else probs.size))
    out: list[SpeechSegment] = []
    for s, e in spans:
        if (e - s) * WINDOW_SECONDS < min_speech:
            continue
        t0 = max(0.0, s * WINDOW_SECONDS - pad)
        t1 = min(end_of_audio, e * WINDOW_SECONDS + pad)
        if out and t0 <= out[-1].end:
            # Padding made two segments touch: share the gap instead of overlapping.
            mid = (out[-1].end - pad + t0 + pad) / 2
            out[-1] = out[-1].model_copy(update={"end": mid})
            t0 = mid
        out.append(SpeechSegment(start=t0, end=t1, confidence=float(np.mean(probs[s:e]))))
    return out


def detect_speech(
    audio: AudioInput,
    *,
    threshold: float | None = None,
    min_speech: float = 0.25,
    min_silence: float = 0.3,
    pad: float = 0.1,
) -> list[SpeechSegment]:
    """Speech segments of a file's audio track or of 16 kHz samples.

    Args:
        audio: A media file with audio, or mono float32 samples at 16 kHz.
        threshold: Speech probability threshold; default ``perception.vad_threshold``.
        min_speech: Shortest segment kept, in seconds.
        min_silence: Shortest pause that separates two segments, in seconds.
        pad: Seconds of context added on each side of a segment.

    Raises:
        MediaError: ``NO_AUDIO_STREAM`` for a file without audio, or the file is unreadable.
    """
    samples = load_samples(audio)
    thr = get_settings().perception.vad_threshold if threshold is None else threshold
    return segments_from_probs(
        speech_probs(samples),
        threshold=thr,
        min_speech=min_speech,
        min_silence=min_silence,
        pad=pad,
        duration=samples.size / SAMPLE_RATE,
    )
