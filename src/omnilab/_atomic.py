"""The project's one atomic file write (a temporary file beside the target, renamed over it)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str, *, sync: bool = True, mode: int | None = None) -> None:
    """Write ``text`` to a temporary file beside ``path``, fsync it (unless ``sync`` is false:
    the caller syncs it later) and rename it over ``path``. ``mode`` (e.g. ``0o600``) is the new
    file's permission bits from its creation on, so it is never readable by others in between."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if mode is None:
        handle = tmp.open("w", encoding="utf-8")
    else:
        tmp.unlink(missing_ok=True)  # O_EXCL below: never write through a planted file or link
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        handle = os.fdopen(fd, "w", encoding="utf-8")
    with handle as f:
        f.write(text)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    tmp.replace(path)
