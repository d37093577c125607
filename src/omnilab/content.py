"""The content union shared by messages, tool results and the media layer.

``Content`` is ``Text | Image | Audio | Video | Document``, discriminated by ``type``. Media parts
refer to a file by ``path`` and may carry the bytes inline (``data``, base64 in JSON); video and
audio take an optional time range in seconds and images an optional crop box. Everything is a
frozen pydantic model that round-trips through JSON.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, model_validator

from omnilab import _wsread

__all__ = [
    "Audio",
    "Content",
    "Document",
    "Image",
    "MediaContent",
    "Text",
    "Video",
    "as_parts",
]


def _bytes_in(value: object) -> object:
    # JSON carries bytes as base64 text; Python callers pass raw bytes, which are kept as they are.
    if isinstance(value, str):
        return base64.b64decode(value.encode("ascii"), validate=True)
    return value


def _bytes_out(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


InlineBytes = Annotated[
    bytes,
    BeforeValidator(_bytes_in),
    PlainSerializer(_bytes_out, return_type=str, when_used="json"),
]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Text(_Part):
    """Plain text."""

    type: Literal["text"] = "text"
    text: str


class _Media(_Part):
    path: Path | None = None
    """The file; used for reading, for its name in messages and for media operations."""
    data: InlineBytes | None = None
    """The file's bytes when they are held in memory (wins over reading ``path``)."""
    mime_type: str | None = None
    """Overrides the type guessed from the file name, e.g. ``audio/wav``."""

    @model_validator(mode="after")
    def _has_source(self) -> Self:
        if self.path is None and self.data is None:
            raise ValueError(f"{self.type_name()} content needs a path or data")
        return self

    @classmethod
    def type_name(cls) -> str:
        field = cls.model_fields["type"]
        return str(field.default)

    @property
    def name(self) -> str:
        """A short name for messages: the file name, or ``<kind> (N bytes)`` for inline data."""
        if self.path is not None:
            return self.path.name
        return f"{self.type_name()} ({len(self.data or b'')} bytes)"

    def read_bytes(self) -> bytes:
        """The content's bytes: ``data`` if set, else the file's, read by the harness's safe
        open (:mod:`omnilab._wsread`): a path in a sandbox workspace is never read through a
        link, and a FIFO, device or folder raises ``OSError`` instead of blocking."""
        if self.data is not None:
            return self.data
        assert self.path is not None  # guaranteed by the validator
        return _wsread.read_bytes(self.path)

    def guess_mime(self, default: str) -> str:
        """``mime_type`` if set, else the type guessed from the file name, else ``default``."""
        if self.mime_type:
            return self.mime_type
        if self.path is not None:
            guessed, _ = mimetypes.guess_type(self.path.name)
            if guessed:
                return guessed
        return default


def _check_range(start: float | None, end: float | None) -> None:
    if start is not None and start < 0:
        raise ValueError(f"start must be >= 0 (got {start})")
    if start is not None and end is not None and end <= start:
        raise ValueError(f"end ({end}) must be after start ({start})")


class Image(_Media):
    """A still image, optionally cropped to ``box = [left, top, right, bottom]`` in pixels."""

    type: Literal["image"] = "image"
    box: tuple[float, float, float, float] | None = None


class Audio(_Media):
    """Audio, optionally limited to ``[start, end)`` seconds."""

    type: Literal["audio"] = "audio"
    start: float | None = None
    end: float | None = None

    @model_validator(mode="after")
    def _valid_range(self) -> Self:
        _check_range(self.start, self.end)
        return self


class Video(_Media):
    """Video (with its audio track), optionally limited to ``[start, end)`` seconds."""

    type: Literal["video"] = "video"
    start: float | None = None
    end: float | None = None

    @model_validator(mode="after")
    def _valid_range(self) -> Self:
        _check_range(self.start, self.end)
        return self


class Document(_Media):
    """A document (PDF, text, markdown, ...)."""

    type: Literal["document"] = "document"


Content = Annotated[Text | Image | Audio | Video | Document, Field(discriminator="type")]
"""One part of a message or tool result."""

MediaContent = Image | Audio | Video | Document
"""The content kinds that refer to media rather than text."""


def as_parts(value: Any) -> Any:
    """Let ``content`` be given as a plain string or a single part (a list of parts is canonical)."""
    if isinstance(value, str):
        return [Text(text=value)]
    if isinstance(value, _Part):
        return [value]
    return value
