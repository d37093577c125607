"""The folders and files the harness writes for itself: run folders, caches, results.

The harness often runs as root, on machines other users share. A folder another user made
(``./omnilab-runs`` in a shared checkout, a shared ``agents.runs_dir``) or a link planted where a
file is about to be written would let that user turn the harness's writes against root's own
files. So:

- :func:`private_folder` makes a runs or cache folder (and missing parents) mode 0700, and
  refuses, with one line, one that is a link, not a folder, owned by another user, or writable
  by others, or that lies below a folder another user owns or others can write (no sticky
  bit): they could swap the folder for theirs. "Others can write" is the rule config files are
  trusted by (:func:`omnilab._trust.others_can_write`): every user, or a group not the user's
  own;
- :func:`resolved_folder` is :func:`private_folder` for a folder the operator may name through
  a link of their own (``serve --runs-dir``): the path as given is checked first, without
  following a link, and only then resolved;
- :func:`own_links_resolved` resolves a folder the harness reads from (a media root): folders
  of other users are fine there, but a link another user owns, anywhere on the way, is refused
  (they could point it at root's own files);
- :func:`new_folder` makes a fresh 0700 folder inside such a folder;
- :func:`omnilab._atomic.write_atomic` (the project's one atomic write) writes a new file
  beside its target, created ``O_EXCL | O_NOFOLLOW`` in the target's folder opened without
  following a link, and renames it over the target (a planted link is replaced, never followed);
- :func:`open_new` opens a file for writing without following a link at its name.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path
from typing import IO

from omnilab._atomic import make_folders
from omnilab._trust import others_can_write
from omnilab.errors import OmnilabError

__all__ = [
    "UnsafeFolderError",
    "check_ancestors",
    "check_folder",
    "new_folder",
    "open_new",
    "own_links_resolved",
    "private_folder",
    "resolved_folder",
]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFolderError(OmnilabError):
    """A folder the harness would write into is a link or another user's, or one it reads from
    lies through another user's link (one line)."""


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _writers(st: os.stat_result) -> str | None:
    """Who besides this user (and root) can add, remove or rename entries of the folder ``st``:
    ``every user`` or ``group NAME (gid N)``; None when nobody, or when the sticky bit keeps
    them to their own entries (``/tmp``)."""
    if not others_can_write(st) or st.st_mode & stat.S_ISVTX:
        return None
    if st.st_mode & 0o002:
        return "every user"
    try:
        return f"group {grp.getgrgid(st.st_gid).gr_name} (gid {st.st_gid})"
    except KeyError:
        return f"group gid {st.st_gid}"


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
    writers = _writers(st)
    if writers is not None:
        raise UnsafeFolderError(f"{path} is writable by {writers}{hint}")


def private_folder(path: str | Path, *, what: str = "folder") -> Path:
    """``path`` (``~`` expanded) made 0700 with its missing parents, or checked with
    :func:`check_folder` when it exists; returns it."""
    folder = Path(path).expanduser()
    check_ancestors(folder, what=what)
    make_folders(folder)
    check_folder(folder, what=what)
    return folder


def resolved_folder(path: str | Path, *, what: str) -> Path:
    """``path`` (``~`` expanded) with its links resolved, made 0700 or checked by
    :func:`private_folder`; returns the resolved folder. The path as given is checked first,
    without following a link: a link there that another user (not root) owns is refused, and
    so is a folder above it that another user owns or others can write (:func:`check_ancestors`),
    since whoever can change the link could point it anywhere between this check and a later
    use. Only then is it resolved, so only a link of this user's (or root's) is followed."""
    given = Path(os.path.abspath(Path(path).expanduser()))  # noqa: PTH100 - lexical, no link
    check_ancestors(given, what=what)
    if not os.path.lexists(given):
        return private_folder(given, what=what)
    return private_folder(own_links_resolved(path, what=what), what=what)


def own_links_resolved(path: str | Path, *, what: str) -> Path:
    """``path`` (``~`` expanded, made absolute) with its links resolved, as
    :func:`os.path.realpath` does, one component at a time without following a link before its
    owner is known: a link (on the path as given, or on where a link leads) that another user
    (not root, not this user) owns is refused with one line, since that user could point it at
    any folder, root's own included. Folders, even another user's, are not refused (a shared
    dataset folder is normal); what is missing is kept as written. Reads nothing but ``lstat``
    and ``readlink``."""
    me = os.geteuid()
    given = Path(path).expanduser()
    # Not abspath: it drops ``x/..`` as written, where the kernel climbs from x's target.
    pending = list(reversed((given if given.is_absolute() else Path.cwd() / given).parts[1:]))
    current, hops = Path("/"), 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        step = current / part
        try:
            st = os.lstat(step)
        except OSError:  # missing, not a folder, or not ours to look into (as realpath does)
            return step.joinpath(*reversed(pending))  # the rest is made (or reported) later
        if not stat.S_ISLNK(st.st_mode):
            current = step
            continue
        if st.st_uid not in (me, 0):
            raise UnsafeFolderError(
                f"{step} is a link owned by {_owner(st.st_uid)}, who could point it at any "
                f"folder; remove it or choose another {what}"
            )
        hops += 1
        if hops > 40:  # the kernel's own limit (ELOOP)
            raise UnsafeFolderError(f"{path} goes through too many links; choose another {what}")
        target = step.readlink()
        if target.is_absolute():
            current = Path("/")
        pending.extend(reversed(target.parts[1:] if target.is_absolute() else target.parts))
    return current


def check_ancestors(path: Path, *, what: str) -> None:
    """Refuses (:class:`UnsafeFolderError`) ``path`` when a folder above it, on the path as
    written or on the one it leads to, belongs to another user (not root) or others (every
    user, or a group not this user's own) can write it without a sticky bit: whoever can write
    there can swap the run's folder for one of theirs holding links, which writes by name
    follow (``O_NOFOLLOW`` covers the last component only)."""
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
            writers = _writers(st) if stat.S_ISDIR(st.st_mode) else None
            if writers is not None:
                raise UnsafeFolderError(f"{path} lies in {folder}, writable by {writers}{hint}")


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
