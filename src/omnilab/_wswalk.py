"""Walking a folder that sandboxed code can write, by descriptor (the walk half of
:mod:`omnilab._wsread`): iterative, never following a link, so a folder swapped for a link while
the (root) harness walks it is not entered and depth costs neither recursion nor a descriptor per
level."""

from __future__ import annotations

import contextlib
import os
import stat
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnilab._wsread import _DIR, _HELD, _open_beneath

__all__ = ["Folder", "Walker", "list_folder", "walk"]


@dataclass
class Folder:
    """One folder of a :func:`walk`: valid only until the walk goes on."""

    parts: tuple[str, ...]
    """Where it is, relative to the walk's root."""
    fd: int
    """Its descriptor (borrowed: do not close)."""
    entries: list[tuple[str, os.stat_result]]
    """Every entry (name, ``lstat``), sorted by name."""
    descend: list[str] = field(default_factory=list)
    """The sub-folders the walk enters next; remove names to skip them."""


class Walker:
    """Opens folders beneath a root descriptor by their parts, keeping the last few open so a
    walk reaches each next folder in one step; never follows a link."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self._held: OrderedDict[tuple[str, ...], int] = OrderedDict()

    def open(self, parts: tuple[str, ...]) -> int:
        """The folder ``parts`` (borrowed: valid until a later :meth:`open` or :meth:`close`)."""
        if not parts:
            return self.root_fd
        fd = self._held.get(parts)
        if fd is not None:
            self._held.move_to_end(parts)
            return fd
        parent = self._held.get(parts[:-1])
        if parent is not None:
            fd = os.open(parts[-1], _DIR, dir_fd=parent)
        else:
            fd = _open_beneath(self.root_fd, parts, _DIR)
        self._held[parts] = fd
        while len(self._held) > _HELD:
            _, old = self._held.popitem(last=False)
            os.close(old)
        return fd

    def close(self) -> None:
        for fd in self._held.values():
            os.close(fd)
        self._held.clear()


def list_folder(fd: int) -> list[tuple[str, os.stat_result]]:
    """The entries of the folder ``fd`` (name, ``lstat``), sorted by name."""
    found = []
    with os.scandir(fd) as it:
        for entry in it:
            with contextlib.suppress(FileNotFoundError):
                found.append((entry.name, entry.stat(follow_symlinks=False)))
    found.sort()
    return found


def walk(
    root: Path | str | int, *, on_error: Callable[[tuple[str, ...], OSError], Any] | None = None
) -> Iterator[Folder]:
    """Every folder under ``root`` (a path or a folder descriptor), top-down and depth first,
    by descriptor: a folder swapped for a link mid-walk is not entered (``on_error`` hears of
    folders that could not be opened). Iterative: depth costs neither recursion nor a
    descriptor per level."""
    own = not isinstance(root, int)
    top = os.open(root, _DIR & ~os.O_NOFOLLOW) if not isinstance(root, int) else root
    walker = Walker(top)
    stack: list[tuple[str, ...]] = [()]
    try:
        while stack:
            parts = stack.pop()
            try:
                fd = walker.open(parts)
                entries = list_folder(fd)
            except OSError as exc:
                if on_error is not None:
                    on_error(parts, exc)
                continue
            folder = Folder(
                parts, fd, entries, [n for n, st in entries if stat.S_ISDIR(st.st_mode)]
            )
            yield folder
            stack.extend((*parts, name) for name in reversed(folder.descend))
    finally:
        walker.close()
        if own:
            os.close(top)
