"""Perception: media turned into compact text evidence, offline by default.

- :func:`transcribe`: speech to timed text (``pocketsphinx`` embedded, ``whisper``, ``openai``);
- :func:`detect_speech`: voice activity (Silero VAD on onnxruntime);
- :func:`audio_events`: speech / music / silence / noise spans;
- :func:`ocr`: lines of text with boxes (``rapidocr`` embedded, ``tesseract``);
- :func:`detect_shots`: shot boundaries with a keyframe per shot;
- :func:`digest`: all of the above for a list of files, cached, as JSON and Markdown.

Backends are registered by name (``asr_backends``, ``ocr_backends``, ``event_taggers``) and
imported on first use, so importing this package loads no model.
"""

from __future__ import annotations

from omnilab.perception.asr import Transcriber, transcribe
from omnilab.perception.asr import backends as asr_backends
from omnilab.perception.digest import DigestOptions, digest
from omnilab.perception.errors import BackendUnavailableError, PerceptionError
from omnilab.perception.events import AudioTagger, audio_events
from omnilab.perception.events import taggers as event_taggers
from omnilab.perception.evidence import Evidence, FileEvidence, ScreenText
from omnilab.perception.ocr import OcrBackend, ocr
from omnilab.perception.ocr import backends as ocr_backends
from omnilab.perception.shots import detect_shots
from omnilab.perception.types import (
    AudioEvent,
    EventLabel,
    Segment,
    Shot,
    SpeechSegment,
    TextBox,
    Transcript,
    Word,
)
from omnilab.perception.vad import detect_speech

__all__ = [
    "AudioEvent",
    "AudioTagger",
    "BackendUnavailableError",
    "DigestOptions",
    "EventLabel",
    "Evidence",
    "FileEvidence",
    "OcrBackend",
    "PerceptionError",
    "ScreenText",
    "Segment",
    "Shot",
    "SpeechSegment",
    "TextBox",
    "Transcriber",
    "Transcript",
    "Word",
    "asr_backends",
    "audio_events",
    "detect_shots",
    "detect_speech",
    "digest",
    "event_taggers",
    "ocr",
    "ocr_backends",
    "transcribe",
]
