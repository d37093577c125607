"""The project's one atomic file write (a new file beside the target, renamed over it).

The harness often runs as root in folders others may have planted things in, so nothing at the
target's name or its temporary name is ever written through: the temporary file is created
``O_EXCL | O_NOFOLLOW`` in the target's folder (opened without following a link), then renamed
over the target (a link there is replaced, not followed). Missing folders are made 0700.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

__all__ = ["make_folders", "write_atomic"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def make_folders(path: Path, mode: int = 0o700) -> None:
    """Makes ``path`` and its missing parents, each made with ``mode``."""
    missing: list[Path] = []
    cur = Path(path)
    while not os.path.lexists(cur):
        missing.append(cur)
        if cur.parent == cur:
            break
        cur = cur.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode)


def write_atomic(
    path: Path, text: str | bytes, *, sync: bool = True, mode: int | None = None
) -> None:
    """Write ``text`` to a new file beside ``path``, fsync it (unless ``sync`` is false: the
    caller syncs it later) and rename it over ``path``. ``mode`` (e.g. ``0o600``) is the new
    file's permission bits from its creation on, so it is never readable by others in between
    (default: 0666 less the umask, as ``open`` makes files)."""
    path = Path(path)
    make_folders(path.parent)
    data = text.encode("utf-8") if isinstance(text, str) else text
    dirfd = os.open(path.parent, _DIR)
    tmp = f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        fd = os.open(tmp, _NEW, 0o666 if mode is None else mode, dir_fd=dirfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if sync:
                    os.fsync(f.fileno())
            os.rename(tmp, path.name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dirfd)
            raise
    finally:
        os.close(dirfd)
