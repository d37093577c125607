"""One object at a URL as :mod:`omnilab.media.remote` reads it: its look-up (what the store
says of its version and size) and its bytes, by range. ``s3://`` objects are read with
botocore's own client (:mod:`._remote_s3`, where the measured reason is), the other stores
(``https://``, ``gs://``, ``az://``) through their fsspec filesystems (:mod:`._remote_fs`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from omnilab._urls import store_of
from omnilab.media._remote_fs import filesystem
from omnilab.media._remote_s3 import S3Object

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["RemoteObject", "open_object"]


class RemoteObject(Protocol):
    """What a fetch asks of an object's store. Store errors propagate as its client raised
    them (the caller classifies and retries them)."""

    ranged: bool
    """Whether one GET gives the object's version with its first bytes (:meth:`first_range`)
    and a range streams into a file; without it, a whole object is read without a range."""

    def info(self) -> Mapping[str, Any]:
        """What the store says: ``size`` and any of ETag, VersionId, generation, MD5,
        Last-Modified."""
        ...

    def read(self, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)``; without them the whole object (no range asked)."""
        ...

    def first_range(self, end: int) -> tuple[dict[str, Any], bytes] | None:
        """:meth:`info` and bytes ``[0, end)`` from one request; ``None`` where the store has
        no such request or the object is empty."""
        ...

    def range_into(self, start: int, end: int, fd: int) -> int:
        """Bytes ``[start, end)`` written at their offsets in ``fd``; how many came."""
        ...


def open_object(url: str) -> RemoteObject:
    """The object at ``url`` (nothing is asked of the store yet, but a missing package or an
    unset credential variable of the bucket's settings raises :class:`OmnilabError`)."""
    if store_of(url.partition("://")[0]) == "s3":
        return S3Object(url)
    fs, path = filesystem(url)
    return _FsObject(fs, path)


class _FsObject:
    """An object read through an fsspec filesystem."""

    ranged = False

    def __init__(self, fs: AbstractFileSystem, path: str) -> None:
        self.fs, self.path = fs, path

    def info(self) -> Mapping[str, Any]:
        found: Mapping[str, Any] = self.fs.info(self.path)
        return found

    def read(self, start: int | None = None, end: int | None = None) -> bytes:
        return bytes(self.fs.cat_file(self.path, start=start, end=end))

    def first_range(self, end: int) -> tuple[dict[str, Any], bytes] | None:
        return None

    def range_into(self, start: int, end: int, fd: int) -> int:
        data = self.read(start, end)
        os.pwrite(fd, data, start)
        return len(data)
