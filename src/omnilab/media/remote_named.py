"""Fetched objects under their own file names (``v1.mp4``), not the cache's key.

The media cache names an entry by its key (``r-<sha256>.mp4``); an agent, its tools and the
model are shown an input's file name (it is in the prompt), so a run from a bucket would
differ from a local run by those names. :func:`named_copy` gives the entry its object's name as
a hard link in the cache's ``.named/<key>/`` dot folder, which the cache's bound and listing
skip; links whose entry was evicted are removed (their link count is back to one).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

__all__ = ["named_copy"]

_NAMED = ".named"
_SWEPT: set[Path] = set()
_SWEPT_LOCK = threading.Lock()


def named_copy(entry: Path, name: str) -> Path:
    """``entry`` (a cache file named by its key) as ``name``: a hard link in the cache's
    ``.named/<key>/`` folder (see the module docstring). Where the file system refuses a hard
    link, the entry itself."""
    folder = entry.parent.parent / _NAMED / entry.stem
    target = folder / name
    with contextlib.suppress(OSError):
        if target.stat().st_ino == entry.stat().st_ino:
            return target
    _sweep(entry.parent.parent)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}-{threading.get_ident()}"
        tmp.unlink(missing_ok=True)
        os.link(entry, tmp)
        tmp.replace(target)
    except OSError:
        return entry
    return target


def _sweep(root: Path) -> None:
    """Remove the named links of evicted entries, once per process and cache."""
    with _SWEPT_LOCK:
        if root in _SWEPT:
            return
        _SWEPT.add(root)
    for link in (root / _NAMED).glob("*/*"):
        with contextlib.suppress(OSError):
            if link.stat().st_nlink <= 1:
                link.unlink()
                link.parent.rmdir()
