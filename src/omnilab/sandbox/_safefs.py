"""File operations of the harness inside folders that sandboxed code can write (workspaces).

Code in the sandbox can plant links there, or swap a folder for one at any moment; the harness
often runs as root. So nothing here resolves a path inside such a folder: every step opens the
next component relative to the previous folder's descriptor with ``O_NOFOLLOW``, files are
created with ``O_EXCL`` and renamed into place (a rename replaces a planted link, never follows
it), and ownership changes use ``follow_symlinks=False``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

__all__ = ["chown_tree", "copy_tree", "open_folder", "place_file", "replace_with_folder"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1024 * 1024


@contextlib.contextmanager
def open_folder(root: Path, parts: tuple[str, ...] = (), *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``root/parts...``, never following a link on the way (a link where a
    folder should be raises ``OSError``); ``create`` makes missing folders (mode 0755)."""
    fd = os.open(root, _DIR)
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part:
                raise OSError(f"unsafe path component {part!r}")
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def place_file(root: Path, folder: tuple[str, ...], name: str, source: Path) -> None:
    """Copies ``source`` (a harness-private file) to ``root/folder/name``: created beside the
    target with ``O_EXCL | O_NOFOLLOW`` and renamed over it, so whatever code planted there
    (a link, a file) is replaced and nothing outside ``root`` is ever written."""
    with open_folder(root, folder, create=True) as dirfd:
        tmp = f".{name}.tmp-{uuid.uuid4().hex}"
        out = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dirfd
        )
        try:
            with source.open("rb") as src, os.fdopen(out, "wb") as dst:
                while chunk := src.read(_CHUNK):
                    dst.write(chunk)
            os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dirfd)
            raise


def replace_with_folder(dirfd: int, name: str, mode: int = 0o1777) -> None:
    """Makes ``name`` (in the folder ``dirfd``) a real folder: a link, file or anything else
    planted there is removed first, never followed."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dirfd)
        st = None
    if st is None:
        os.mkdir(name, mode, dir_fd=dirfd)
    fd = os.open(name, _DIR, dir_fd=dirfd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def chown_tree(root: Path, uid: int, gid: int, *, skip: tuple[str, ...] = ()) -> None:
    """Gives everything under ``root`` (and ``root``) to ``uid``: a walk by descriptors that
    never enters a link, and changes links themselves rather than their targets."""
    for _folder, dirs, files, dirfd in os.fwalk(root, follow_symlinks=False):
        if _folder == str(root):
            dirs[:] = [d for d in dirs if d not in skip]
        for name in [*dirs, *files]:
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                if st.st_uid != uid or st.st_gid != gid:
                    os.chown(name, uid, gid, dir_fd=dirfd, follow_symlinks=False)
    os.chown(root, uid, gid, follow_symlinks=False)


def copy_tree(src_fd: int, dst_fd: int) -> tuple[int, int]:
    """Copies the folder ``src_fd`` into ``dst_fd`` (both descriptors): folders, regular files
    and links as links (never followed); other kinds are skipped. Returns (bytes, entries)."""
    size = count = 0
    for entry in os.scandir(src_fd):
        st = entry.stat(follow_symlinks=False)
        count += 1
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(entry.name, dir_fd=src_fd), entry.name, dir_fd=dst_fd)
        elif stat.S_ISDIR(st.st_mode):
            with contextlib.suppress(FileExistsError):
                os.mkdir(entry.name, 0o755, dir_fd=dst_fd)
            sub_src = os.open(entry.name, _DIR, dir_fd=src_fd)
            sub_dst = os.open(entry.name, _DIR, dir_fd=dst_fd)
            try:
                os.fchmod(sub_dst, stat.S_IMODE(st.st_mode) & 0o1777)
                more, n = copy_tree(sub_src, sub_dst)
                size, count = size + more, count + n
            finally:
                os.close(sub_src)
                os.close(sub_dst)
        elif stat.S_ISREG(st.st_mode):
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            src = os.open(entry.name, flags, dir_fd=src_fd)
            mode = stat.S_IMODE(st.st_mode) & 0o777
            create = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            dst = os.open(entry.name, create, mode, dir_fd=dst_fd)
            try:
                size += _copy_fd(src, dst)
                os.fchmod(dst, mode)
            finally:
                os.close(src)
                os.close(dst)
    return size, count


def _copy_fd(src: int, dst: int) -> int:
    total = 0
    while chunk := os.read(src, _CHUNK):
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view) :]
        total += len(chunk)
    return total
