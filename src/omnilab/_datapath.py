"""Paths named by data: a file a dataset, a trajectory or a request names lies beneath a root.

A dataset line, a trajectory's message part or an HTTP request is not the operator's word: it
can name ``/etc/shadow`` or ``../../key`` while the harness runs as root. Such a path becomes a
:class:`DataPath` (its declared root plus a relative part without ``..``), made only by
:meth:`DataPath.beneath`, which refuses absolute paths and escapes with a one-line
:class:`DataPathError` naming the item. A ``DataPath`` has no ``__fspath__``: ``open()``,
``Path()`` or a decoder cannot take it (mypy says so), only :mod:`omnilab._wsread`'s opener,
which opens it beneath its root and follows no link on the way (the workspace rules).

Nothing here reads the file system.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import final

from omnilab.errors import OmnilabError

__all__ = ["DataPath", "DataPathError"]

_KEY = object()  # only the validating constructor holds it


class DataPathError(OmnilabError):
    """A path from data leaves its root (absolute or ``..``); the message names the item."""


@final
class DataPath:
    """A relative path beneath a root, validated; open it with :mod:`omnilab._wsread`."""

    __slots__ = ("_rel", "_root")

    def __init__(self, root: str, rel: str, key: object) -> None:
        if key is not _KEY:
            raise TypeError("make a DataPath with DataPath.beneath(root, given, item=...)")
        self._root = root
        self._rel = rel

    @classmethod
    def beneath(cls, root: str | Path, given: str, *, item: str) -> DataPath:
        """``given`` (as the data wrote it) beneath ``root``; raises :class:`DataPathError`
        (one line naming ``item``) for an absolute path outside ``root``, ``~``, or one with a
        ``..`` component. An absolute path inside ``root`` (compared as written, links not
        resolved) is taken relative to it."""
        text = str(given)
        if not text or "\x00" in text:
            raise DataPathError(f"{item}: an empty or malformed file path {text!r}")
        top = os.path.abspath(os.fspath(root))  # noqa: PTH100 - lexical: resolve() follows links
        if text.startswith("/") and text.startswith(top.rstrip("/") + "/"):
            text = text[len(top.rstrip("/")) + 1 :]  # written out in full, still beneath
        if text.startswith(("/", "~", "\\")) or (len(text) > 1 and text[1] == ":"):
            raise DataPathError(
                f"{item}: {text!r} is an absolute path; paths from data must lie beneath {root}"
            )
        parts: list[str] = []
        for part in text.replace("\\", "/").split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                # Climbing inside the root is still refused: the lexical answer could differ
                # from the kernel's once a folder on the way is a link.
                raise DataPathError(
                    f"{item}: {text!r} climbs with '..'; paths from data must lie beneath {root}"
                )
            parts.append(part)
        if not parts:
            raise DataPathError(f"{item}: {text!r} names the root folder, not a file")
        return cls(top, "/".join(parts), _KEY)

    @property
    def root(self) -> str:
        """The folder the path lies beneath (absolute, as given: links not resolved)."""
        return self._root

    @property
    def rel(self) -> str:
        """The path relative to :attr:`root`: no ``..``, not absolute, no empty parts."""
        return self._rel

    @property
    def parts(self) -> tuple[str, ...]:
        """:attr:`rel`'s components."""
        return tuple(self._rel.split("/"))

    @property
    def name(self) -> str:
        """The last component (the file name)."""
        return self._rel.rsplit("/", 1)[-1]

    def shown(self) -> Path:
        """Where the file is, for messages, ids and records (never open this by name: a link
        on the way would be followed)."""
        return Path(self._root, self._rel)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataPath) and (self._root, self._rel) == (
            other._root,
            other._rel,
        )

    def __hash__(self) -> int:
        return hash((self._root, self._rel))

    def __repr__(self) -> str:
        return f"DataPath({self._root!r}, {self._rel!r})"
