"""Request bodies whose media payloads stay in their files until the bytes are sent.

A wire message built by :mod:`omnilab.models.providers.openai_wire` carries each media payload
(an image's data URL, an audio part's base64) as a :class:`FileData` that names the prepared
file instead of holding its base64 text. :func:`stream_body` turns such a body into the exact
bytes ``json.dumps(body, ensure_ascii=False).encode()`` gives once every :class:`FileData` is
replaced by its text (:func:`materialize`), but as a list of pieces: the JSON text around the
payloads, and the files, read and base64-encoded in chunks as they are written. An 80-160 MB
request then costs one chunk of memory instead of three copies of the body (the dict's
strings, the JSON text and its UTF-8 bytes).

The bytes are identical because a payload's JSON text is ``"`` + prefix + base64 + ``"``:
base64 and the data-URL prefixes use no character JSON escapes (the prefix is escaped like any
JSON string all the same), and base64 of a file read in pieces of a multiple of 3 bytes is the
concatenation of the pieces' base64.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnilab import _wsread

__all__ = [
    "FileData",
    "MediaChangedError",
    "StreamedBody",
    "file_data",
    "materialize",
    "stream_body",
]

# Bytes of a file read per piece: a multiple of 3, so each piece's base64 has no padding.
_READ_BYTES = 3 * 256 * 1024


class MediaChangedError(OSError):
    """A prepared file changed or disappeared between building a body and sending it."""


@dataclass(frozen=True)
class FileData:
    """A JSON string that is ``prefix`` followed by the base64 of the file at ``path``."""

    path: Path
    prefix: str = ""
    size: int = -1
    """The file's size when the body was built (``-1``: look it up now)."""

    def sized(self) -> FileData:
        """This payload with its file's current size."""
        if self.size >= 0:
            return self
        fd, st = _wsread.open_file(self.path)
        os.close(fd)
        return FileData(self.path, self.prefix, st.st_size)

    def text(self) -> str:
        """The whole JSON string value, in memory."""
        return self.prefix + base64.b64encode(_wsread.read_bytes(self.path)).decode("ascii")

    def encoded_size(self) -> int:
        """Bytes of this value in the JSON text, quotes included."""
        prefix = json.dumps(self.prefix, ensure_ascii=False).encode()
        return len(prefix) + 4 * (-(-self.sized().size // 3))

    def chunks(self) -> Iterator[bytes]:
        """The JSON text of this value, quotes included, a piece at a time."""
        quoted = json.dumps(self.prefix, ensure_ascii=False).encode()
        yield quoted[:-1]
        expected = self.sized().size
        seen = 0
        try:
            # Opened again by _wsread's rules: a file under a workspace may have become a link
            # or a FIFO since the body was built.
            fd, _ = _wsread.open_file(self.path)
            with os.fdopen(fd, "rb") as f:
                while piece := f.read(_READ_BYTES):
                    seen += len(piece)
                    if seen > expected:
                        break
                    yield base64.b64encode(piece)
        except OSError as e:
            if e.errno == errno.ENOENT:
                raise MediaChangedError(
                    f"{self.path.name} was removed before it was sent"
                ) from None
            raise MediaChangedError(f"{self.path.name} could not be read ({e.strerror})") from None
        if seen != expected:
            raise MediaChangedError(f"{self.path.name} changed size before it was sent")
        yield b'"'


def file_data(path: Path, prefix: str = "") -> FileData:
    """A payload of the file at ``path``, opened once now so that a file that cannot be read
    fails here, when the body is built, with the error reading it would give (a link or FIFO
    under a workspace is refused by :mod:`omnilab._wsread`'s rules)."""
    fd, st = _wsread.open_file(path)
    os.close(fd)
    return FileData(path, prefix, st.st_size)


def materialize(value: Any) -> Any:
    """``value`` with every :class:`FileData` replaced by its text (the body as a plain dict)."""
    if isinstance(value, FileData):
        return value.text()
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialize(v) for v in value]
    return value


@dataclass(frozen=True)
class StreamedBody:
    """A JSON request body as pieces: UTF-8 JSON text and file payloads."""

    pieces: tuple[bytes | FileData, ...]
    size: int
    """Length of the whole body in bytes (the ``Content-Length``)."""

    def chunks(self) -> Iterator[bytes]:
        """The body's bytes in order, a piece (at most a read's worth) at a time."""
        for piece in self.pieces:
            if isinstance(piece, FileData):
                yield from piece.chunks()
            elif piece:
                yield piece

    def to_bytes(self) -> bytes:
        """The whole body in memory (tests, small bodies)."""
        return b"".join(self.chunks())

    @property
    def files(self) -> int:
        """How many payloads are read from files."""
        return sum(isinstance(p, FileData) for p in self.pieces)


def stream_body(body: dict[str, Any]) -> StreamedBody:
    """``body`` as the pieces of ``json.dumps(materialize(body), ensure_ascii=False)``."""
    payloads: list[FileData] = []
    # A marker no text can contain by chance: a fresh random id per body.
    mark = f"omnilab-file:{uuid.uuid4().hex}:"

    def placeholder(value: object) -> str:
        if not isinstance(value, FileData):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        payloads.append(value.sized())
        return f"{mark}{len(payloads) - 1}"

    text = json.dumps(body, ensure_ascii=False, default=placeholder)
    pieces: list[bytes | FileData] = []
    rest = text
    for i, payload in enumerate(payloads):
        before, _, rest = rest.partition(f'"{mark}{i}"')
        pieces += [before.encode(), payload]
    pieces.append(rest.encode())
    size = sum(p.encoded_size() if isinstance(p, FileData) else len(p) for p in pieces)
    return StreamedBody(tuple(pieces), size)
