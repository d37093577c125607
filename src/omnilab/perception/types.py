"""The evidence types perception produces: small, frozen, JSON-serialisable pydantic models.

Every time is in seconds from the start of the media file (absolute, never chunk-relative).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AudioEvent",
    "EventLabel",
    "Segment",
    "Shot",
    "SpeechSegment",
    "TextBox",
    "Transcript",
    "Word",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Word(_Frozen):
    """One recognised word with its time span."""

    text: str
    start: float
    end: float
    confidence: float | None = None
    """Backend-specific score in 0..1 (posterior or probability); ``None`` when not given."""


class Segment(_Frozen):
    """A stretch of speech: a phrase or sentence as the backend groups it."""

    start: float
    end: float
    text: str
    speaker: str | None = None
    confidence: float | None = None
    words: list[Word] = Field(default_factory=list)
    """Word timings when the backend gives them (empty otherwise)."""


class Transcript(_Frozen):
    """What was said in a piece of audio, by whom when known, with times."""

    segments: list[Segment] = Field(default_factory=list)
    backend: str
    """The ASR backend that ran."""
    model: str | None = None
    """Its model, when it has a choice (``embedded:tiny.en``, a folder, ``whisper-1``)."""
    language: str | None = None
    duration: float | None = None
    """Seconds of audio that were transcribed."""
    notes: list[str] = Field(default_factory=list)
    """What a reader should know: a fallback backend, audio that may not be English, ..."""

    @property
    def text(self) -> str:
        """All segment texts joined by spaces."""
        return " ".join(s.text for s in self.segments if s.text)

    @property
    def words(self) -> list[Word]:
        """Every word of every segment, in order."""
        return [w for s in self.segments for w in s.words]


class SpeechSegment(_Frozen):
    """A span where voice activity detection heard speech."""

    start: float
    end: float
    confidence: float
    """Mean speech probability over the span."""


class EventLabel(StrEnum):
    """The vocabulary of audio events (see docs/perception.md for how each is decided)."""

    SPEECH = "speech"
    MUSIC = "music"
    SILENCE = "silence"
    NOISE = "noise"


class AudioEvent(_Frozen):
    """A span of a sound track with one label."""

    label: EventLabel
    start: float
    end: float
    confidence: float
    """Fraction of the span's analysis windows that agreed with the label (0..1)."""


class TextBox(_Frozen):
    """A line of text found in an image."""

    text: str
    box: tuple[float, float, float, float]
    """Axis-aligned ``[left, top, right, bottom]`` in pixels of the input image."""
    confidence: float
    polygon: list[tuple[float, float]] = Field(default_factory=list)
    """The detector's corner points (clockwise from top-left) when the text is rotated."""


class Shot(_Frozen):
    """A continuous take between two cuts, with the time of a representative keyframe."""

    index: int
    start: float
    end: float
    keyframe: float
    """Timestamp of the frame that best represents the shot (its middle sampled frame)."""
