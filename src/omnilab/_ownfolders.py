"""The folders and files the harness writes for itself: run folders, caches, results.

The harness often runs as root, on machines other users share. A folder another user made
(``./omnilab-runs`` in a shared checkout, a shared ``agents.runs_dir``) or a link planted where a
file is about to be written would let that user turn the harness's writes against root's own
files. So:

- :func:`private_folder` makes a runs or cache folder (and missing parents) mode 0700, and
  refuses, with one line, one that is a link, not a folder, owned by another user, or writable
  by others, or that lies below a folder another user owns or every user can write (no sticky
  bit): they could swap the folder for theirs;
- :func:`new_folder` makes a fresh 0700 folder inside such a folder;
- :func:`omnilab._atomic.write_atomic` (the project's one atomic write) writes a new file
  beside its target, created ``O_EXCL | O_NOFOLLOW`` in the target's folder opened without
  following a link, and renames it over the target (a planted link is replaced, never followed);
- :func:`open_new` opens a file for writing without following a link at its name.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path
from typing import IO

from omnilab._atomic import make_folders
from omnilab.errors import OmnilabError

__all__ = [
    "UnsafeFolderError",
    "check_ancestors",
    "check_folder",
    "new_folder",
    "open_new",
    "private_folder",
]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFolderError(OmnilabError):
    """A folder the harness would write into is a link or another user's (one line)."""


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_folder(path: Path, *, what: str) -> None:
    """Refuses (:class:`UnsafeFolderError`) ``path`` unless it is a real folder of this user's
    that no other user can write."""
    st = os.lstat(path)
    hint = f"; remove it or choose another {what}" if what else ""
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFolderError(f"{path} is a link; the harness does not write through links{hint}")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolderError(f"{path} is not a folder{hint}")
    if st.st_uid != os.geteuid():
        raise UnsafeFolderError(
            f"{path} belongs to {_owner(st.st_uid)}, not to this user ({_owner(os.geteuid())}); "
            f"another user's folder could redirect the harness's writes{hint}"
        )
    if st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX:
        raise UnsafeFolderError(f"{path} is writable by every user{hint}")


def private_folder(path: str | Path, *, what: str = "folder") -> Path:
    """``path`` (``~`` expanded) made 0700 with its missing parents, or checked with
    :func:`check_folder` when it exists; returns it."""
    folder = Path(path).expanduser()
    check_ancestors(folder, what=what)
    make_folders(folder)
    check_folder(folder, what=what)
    return folder


def check_ancestors(path: Path, *, what: str) -> None:
    """Refuses (:class:`UnsafeFolderError`) ``path`` when a folder above it, on the path as
    written or on the one it leads to, belongs to another user (not root) or every user can
    write it without a sticky bit: whoever can write there can swap the run's folder for one of
    theirs holding links, which writes by name follow (``O_NOFOLLOW`` covers the last
    component only)."""
    hint = f"; choose another {what}" if what else ""
    me = os.geteuid()
    written = Path(os.path.abspath(path))  # noqa: PTH100 - lexical: links are checked too
    for chain in (written.parents, Path(os.path.realpath(written)).parents):
        for folder in chain:
            try:
                st = os.lstat(folder)
            except FileNotFoundError:
                continue  # made below, 0700
            if st.st_uid not in (me, 0):
                raise UnsafeFolderError(
                    f"{path} lies in {folder}, which belongs to {_owner(st.st_uid)}: that user "
                    f"could redirect the harness's writes{hint}"
                )
            if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX:
                raise UnsafeFolderError(f"{path} lies in {folder}, writable by every user{hint}")


def new_folder(parent: Path, name: str) -> Path:
    """A fresh folder ``parent/name`` (mode 0700); ``FileExistsError`` when it exists. The
    parent is opened without following a link, so the folder lands where it was checked."""
    if name in ("", ".", "..") or "/" in name:
        raise UnsafeFolderError(f"unsafe folder name {name!r}")
    fd = os.open(parent, _DIR)
    try:
        os.mkdir(name, 0o700, dir_fd=fd)
    finally:
        os.close(fd)
    return parent / name


def open_new(path: Path, *, append: bool = False, mode: int = 0o644) -> IO[str]:
    """``path`` opened for writing text (emptied unless ``append``), its missing folders made
    (0700); a link at its name is refused (``OSError``), never followed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, flags, mode)
    except FileNotFoundError:
        make_folders(path.parent)
        fd = os.open(path, flags, mode)
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")
