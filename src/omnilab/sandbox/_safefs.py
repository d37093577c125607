"""File operations of the harness inside folders that sandboxed code can write (workspaces).

Code in the sandbox can plant links there, or swap a folder for one at any moment; the harness
often runs as root. So nothing here resolves a path inside such a folder: every step opens the
next component relative to the previous folder's descriptor with ``O_NOFOLLOW``, files are
created with ``O_EXCL`` and renamed into place (a rename replaces a planted link, never follows
it), and ownership changes use ``follow_symlinks=False``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

from omnilab._datapath import DataPath
from omnilab._wsread import copy_to, open_dir
from omnilab._wswalk import Walker, list_folder, walk

__all__ = [
    "chown_tree",
    "copy_tree",
    "open_folder",
    "place_bytes",
    "place_file",
    "remove_children",
    "remove_tree",
    "replace_with_folder",
]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CHUNK = 1024 * 1024

open_folder = open_dir
"""A descriptor of ``root/parts...`` without following links (see :func:`omnilab._wsread.open_dir`)."""


def place_file(root: Path, folder: tuple[str, ...], name: str, source: Path | DataPath) -> None:
    """Copies ``source`` (a harness-private file) to ``root/folder/name``: created beside the
    target with ``O_EXCL | O_NOFOLLOW`` and renamed over it, so whatever code planted there
    (a link, a file) is replaced and nothing outside ``root`` is ever written."""

    def write(dst: IO[bytes]) -> None:
        # The source is the harness's own, but a FIFO or device must not block it.
        copy_to(source, dst, max_bytes=None)

    _place(root, folder, name, write)


def place_bytes(root: Path, folder: tuple[str, ...], name: str, data: bytes) -> None:
    """:func:`place_file` for bytes held in memory (a view the harness rendered)."""
    _place(root, folder, name, lambda dst: dst.write(data))


def _place(
    root: Path, folder: tuple[str, ...], name: str, write: Callable[[IO[bytes]], object]
) -> None:
    if name in ("", ".", "..") or "/" in name:
        raise OSError(f"unsafe file name {name!r}")
    with open_folder(root, folder, create=True) as dirfd:
        tmp = f".{name}.tmp-{uuid.uuid4().hex}"
        out = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dirfd
        )
        try:
            with os.fdopen(out, "wb") as dst:
                write(dst)
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


def chown_tree(root: Path, uid: int, gid: int, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Gives everything under ``root`` (and ``root``) to ``uid``: an iterative walk by
    descriptors that never enters a link, and changes links themselves rather than their
    targets. Returns what could not be changed (one line each, at most a few)."""
    problems = _Problems()
    for folder in walk(root, on_error=problems.add):
        if not folder.parts:
            folder.descend[:] = [d for d in folder.descend if d not in skip]
        for name, st in folder.entries:
            if not folder.parts and name in skip:
                continue
            if st.st_uid != uid or st.st_gid != gid:
                try:
                    os.chown(name, uid, gid, dir_fd=folder.fd, follow_symlinks=False)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    problems.add((*folder.parts, name), exc)
    os.chown(root, uid, gid, follow_symlinks=False)
    return problems.lines("chown")


class _OverTotalError(Exception):
    """A file that would take the copy past its total."""


def copy_tree(
    src_fd: int, dst_fd: int, *, max_bytes: int | None = None, refused: list[str] | None = None
) -> tuple[int, int, list[str]]:
    """Copies the folder ``src_fd`` into ``dst_fd`` (both descriptors): folders, regular files
    and links as links (never followed); other kinds (FIFOs, sockets) are skipped. Iterative:
    any depth. An entry that cannot be copied does not stop the others; returns (bytes,
    entries, problems).

    Files keep their holes (a sparse file is copied sparse, never written dense). With
    ``max_bytes``, files count at their apparent size (``st_size``, holes included): a file that
    would take the total past it is not copied, and named in ``refused`` instead."""
    size = count = 0
    problems = _Problems()
    over = _Problems()
    left = [max_bytes]
    dst = Walker(dst_fd)
    try:
        for folder in walk(src_fd, on_error=problems.add):
            try:
                out = dst.open(folder.parts)
            except OSError as exc:
                problems.add(folder.parts, exc)
                folder.descend.clear()
                continue
            for name, st in folder.entries:
                count += 1
                try:
                    size += _copy_entry(folder.fd, out, name, st, left)
                except _OverTotalError as exc:
                    over.add((*folder.parts, name), OSError(str(exc)))
                except OSError as exc:
                    problems.add((*folder.parts, name), exc)
                    if name in folder.descend:
                        folder.descend.remove(name)
    finally:
        dst.close()
    if refused is not None:
        lines = over.lines("copy")
        refused += [
            x.replace("copy failed for", "not copied, past the workspace total:") for x in lines
        ]
    return size, count, problems.lines("copy")


def _copy_entry(src: int, dst: int, name: str, st: os.stat_result, left: list[int | None]) -> int:
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=src), name, dir_fd=dst)
    elif stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=dst)
        fd = os.open(name, _DIR, dir_fd=dst)
        try:
            os.fchmod(fd, mode & 0o1777)
        finally:
            os.close(fd)
    elif stat.S_ISREG(st.st_mode):
        fin = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=src)
        create = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            now = os.fstat(fin)
            if not stat.S_ISREG(now.st_mode):
                return 0  # swapped for something else since it was listed
            budget = left[0]
            if budget is not None:
                if now.st_size > budget:
                    raise _OverTotalError(f"{now.st_size} bytes, {budget} left")
                left[0] = budget - now.st_size
            fout = os.open(name, create, mode & 0o777, dir_fd=dst)
            try:
                copied = _copy_fd(fin, fout, now.st_size)
                os.fchmod(fout, mode & 0o777)
            finally:
                os.close(fout)
        finally:
            os.close(fin)
        return copied
    return 0


def remove_children(dirfd: int) -> list[str]:
    """Removes everything inside the folder ``dirfd`` (not the folder), links as links, at any
    depth without recursion. Returns what could not be removed.

    Each sub-folder met below the top is first renamed up into ``dirfd`` (a rename never follows
    a link), so every folder is emptied and removed one level down from ``dirfd``: a tree
    thousands of levels deep costs neither recursion nor a path walk per folder.
    """
    problems = _Problems()
    queue: list[str] = []
    for name, st in _entries(dirfd, problems):
        if stat.S_ISDIR(st.st_mode):
            queue.append(name)
        else:
            _unlink(dirfd, (), name, problems)
    while queue:
        top = queue.pop()
        try:
            fd = os.open(top, _DIR, dir_fd=dirfd)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.add((top,), exc)
            continue
        try:
            for name, st in _entries(fd, problems):
                if not stat.S_ISDIR(st.st_mode):
                    _unlink(fd, (top,), name, problems)
                    continue
                flat = f".omnilab-rm-{uuid.uuid4().hex}"
                try:
                    os.rename(name, flat, src_dir_fd=fd, dst_dir_fd=dirfd)
                    queue.append(flat)
                except OSError as exc:
                    problems.add((top, name), exc)
        finally:
            os.close(fd)
        try:
            os.rmdir(top, dir_fd=dirfd)
        except OSError as exc:
            problems.add((top,), exc)
    return problems.lines("remove")


def remove_tree(path: Path) -> list[str]:
    """Removes the folder ``path`` and everything in it (a workspace after its run): like
    ``shutil.rmtree`` but at any depth (``rmtree`` recurses and fails past ~1,000 levels) and
    never through a link. A missing folder is fine; returns what could not be removed."""
    try:
        fd = os.open(path, _DIR)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"remove failed for {path}: {exc.strerror or exc}"]
    try:
        problems = remove_children(fd)
    finally:
        os.close(fd)
    try:
        path.rmdir()
    except OSError as exc:
        problems.append(f"remove failed for {path}: {exc.strerror or exc}")
    return problems


def _entries(fd: int, problems: _Problems) -> list[tuple[str, os.stat_result]]:
    try:
        return list_folder(fd)
    except OSError as exc:
        problems.add((), exc)
        return []


def _unlink(fd: int, where: tuple[str, ...], name: str, problems: _Problems) -> None:
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.add((*where, name), exc)


class _Problems:
    """The first few failures of a tree operation, and how many there were."""

    def __init__(self) -> None:
        self.count = 0
        self.first: list[str] = []

    def add(self, parts: tuple[str, ...], exc: OSError) -> None:
        self.count += 1
        if len(self.first) < 3:
            self.first.append(f"{'/'.join(parts) or '.'}: {exc.strerror or exc}")

    def lines(self, what: str) -> list[str]:
        if not self.count:
            return []
        more = f" (and {self.count - len(self.first)} more)" if self.count > len(self.first) else ""
        return [f"{what} failed for {'; '.join(self.first)}{more}"]


def _copy_fd(src: int, dst: int, size: int) -> int:
    """Copies the first ``size`` bytes of ``src`` to ``dst``, holes as holes (only the data
    regions are read and written; the length is set by ``ftruncate``). Returns the bytes
    written."""
    total = pos = 0
    while pos < size:
        try:
            start = os.lseek(src, pos, os.SEEK_DATA)
            end = min(os.lseek(src, start, os.SEEK_HOLE), size)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break  # nothing but a hole up to the end
            start, end = pos, size  # no hole support here: copy the rest as it reads
        total += _copy_range(src, dst, start, end)
        pos = end if end > pos else size
    os.ftruncate(dst, size)
    return total


def _copy_range(src: int, dst: int, pos: int, end: int) -> int:
    total = 0
    while pos < end and (chunk := os.pread(src, min(_CHUNK, end - pos), pos)):
        view = memoryview(chunk)
        while view:
            written = os.pwrite(dst, view, pos)
            view, pos = view[written:], pos + written
        total += len(chunk)
    return total
