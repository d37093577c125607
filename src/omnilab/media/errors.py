"""The one error type of the media layer.

Agents show these messages to models, so every message names what was asked and what the file
allows, in one line, e.g. ``t_end 130.0 s is past the end of video.mp4 (duration 122.4 s)``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from omnilab.errors import OmnilabError

__all__ = ["MediaError", "MediaErrorCode", "fmt_s"]


class MediaErrorCode(StrEnum):
    """Stable codes: agents, tools and tests match on these, never on message text."""

    NOT_FOUND = "NOT_FOUND"
    UNSUPPORTED = "UNSUPPORTED"
    CORRUPT = "CORRUPT"
    NO_VIDEO_STREAM = "NO_VIDEO_STREAM"
    NO_AUDIO_STREAM = "NO_AUDIO_STREAM"
    TS_OOB = "TS_OOB"
    INVALID_RANGE = "INVALID_RANGE"
    TOO_MANY_FRAMES = "TOO_MANY_FRAMES"
    TOO_LONG = "TOO_LONG"
    INVALID_BOX = "INVALID_BOX"
    TOO_MANY_PIXELS = "TOO_MANY_PIXELS"
    # Inputs at URLs (omnilab.media.remote).
    DENIED = "DENIED"
    UNREACHABLE = "UNREACHABLE"
    CHANGED = "CHANGED"


class MediaError(OmnilabError):
    """A request the media layer cannot serve, with a stable ``code`` and a one-line message."""

    def __init__(self, code: MediaErrorCode, message: str, *, path: Path | str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = Path(path) if path is not None else None

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"MediaError({self.code.value}, {self.message!r})"

    def to_dict(self) -> dict[str, str]:
        """The model-readable form used by tools and trajectories."""
        return {"code": self.code.value, "message": self.message}


def fmt_s(seconds: float) -> str:
    """Seconds as shown in messages: one decimal unless more are needed to tell values apart."""
    text = f"{seconds:.1f}"
    if abs(float(text) - seconds) > 1e-9:
        text = f"{seconds:.3f}".rstrip("0")
    return f"{text} s"
