"""The one way the harness reads what lies in a folder that sandboxed code can write.

Sandboxed code can plant a link, a FIFO or a decompression bomb in its workspace, or swap a
folder for a link while the harness walks it; the harness often runs as root. So every read of
anything under such a folder (views, the perception store, staged files, artifacts,
``image_read``, report media, trajectory media hashes, the created-files snapshot, the MCP
folder) goes through here:

- paths are opened relative to the folder's descriptor, never following a link on any component
  (``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it, else one
  ``O_NOFOLLOW`` open per component), always with ``O_NONBLOCK`` so a FIFO cannot block;
- ``fstat`` of the opened descriptor must say regular file, and sizes are capped before reading;
- images are refused on their header's size (pixels) before anything is decoded;
- folders are walked by descriptor, iteratively (:mod:`omnilab._wswalk`) (a tree thousands of levels deep needs neither
  recursion nor a descriptor per level).

Folders become untrusted with :func:`mark_untrusted` (the sandbox does it when code first gets
a workspace); :func:`read_bytes` and :func:`regular_file` apply the rules to any path under one,
and open other paths (the user's own files, the media cache) normally but still refuse what is
not a regular file. Failures raise :class:`UnsafeFileError`, an ``OSError`` with a one-line message.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from omnilab._datapath import DataPath

if TYPE_CHECKING:
    from PIL import Image as PILImage

__all__ = [
    "MAX_PIXELS",
    "UnsafeFileError",
    "check_pixels",
    "copy_open",
    "copy_to",
    "mark_untrusted",
    "open_dir",
    "open_file",
    "open_image",
    "read_bytes",
    "regular_file",
    "untrusted_root",
]

MAX_PIXELS = 50_000_000
"""Images with more pixels are refused before decoding (a 13000 x 13000 PNG of half a megabyte
decodes to half a gigabyte; 50 MP is more than any camera photo a task needs)."""
DEFAULT_MAX_BYTES = 512 * 1024**2
"""What one read takes at most unless the caller says otherwise."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CHUNK = 1024 * 1024
# openat2(2): one syscall that resolves a whole relative path beneath a descriptor.
_SYS_OPENAT2 = 437  # one number on every architecture (the unified table), alpha aside
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
# Descriptors a walk keeps open to reach the next folder in one step (the rest are reopened).
_HELD = 16

_untrusted: set[str] = set()
_lock = threading.Lock()


class UnsafeFileError(OSError):
    """A path the harness will not read: a link, not a regular file, too large, outside."""

    def __str__(self) -> str:
        return str(self.strerror)  # one line, without the "[Errno N]" prefix


def mark_untrusted(root: Path | str) -> None:
    """From now on, reads of paths under ``root`` (a workspace) follow the rules above."""
    path = os.path.abspath(root)  # noqa: PTH100 - lexical: resolve() would follow links
    with _lock:
        _untrusted.add(path)
        _untrusted.add(os.path.realpath(path))


def untrusted_root(path: Path | str) -> tuple[str, str] | None:
    """The marked folder ``path`` lies in and the path relative to it, or None."""
    if not _untrusted:
        return None
    full = os.path.abspath(path)  # noqa: PTH100 - lexical, as above
    # String prefixes, not PurePath.parents: this runs on every media read of every model call.
    prefix = full
    while (cut := prefix.rfind("/")) > 0:
        prefix = prefix[:cut]
        if prefix in _untrusted:
            return prefix, full[cut + 1 :]
    return None


def _parts(rel: str) -> tuple[str, ...]:
    parts = tuple(p for p in rel.split("/") if p not in ("", "."))
    if ".." in parts or rel.startswith("/"):
        raise UnsafeFileError(errno.EPERM, f"{rel} leaves its folder ('..' or absolute)")
    return parts


# -- opening beneath a descriptor ----------------------------------------------------------------

_openat2_ok: bool | None = None  # None: not tried yet


@functools.cache
def _openat2_call() -> tuple[Any, Any]:
    """libc's ``syscall`` and the ``struct open_how`` type (made once: ctypes types are slow
    to build)."""
    import ctypes

    class How(ctypes.Structure):
        _fields_ = (
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        )

    return ctypes.CDLL(None, use_errno=True).syscall, How


def _openat2(dirfd: int, rel: str, flags: int) -> int | None:
    """``openat2(dirfd, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)``; None where the
    kernel (or a seccomp filter) lacks it, so the caller walks component by component."""
    global _openat2_ok
    if _openat2_ok is None and os.uname().machine.startswith("alpha"):
        _openat2_ok = False  # its own numbering: 437 is another call there
    if _openat2_ok is False:
        return None
    import ctypes

    syscall, how_type = _openat2_call()
    how = how_type(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    for _ in range(8):  # EAGAIN: a rename raced the lookup; the kernel asks to try again
        fd = int(syscall(_SYS_OPENAT2, dirfd, os.fsencode(rel), ctypes.byref(how), 24))
        if fd >= 0:
            _openat2_ok = True
            return fd
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM) and _openat2_ok is None:
            _openat2_ok = False
            return None
        if err == errno.EXDEV:
            err = errno.ELOOP  # "would leave the folder": only a link can do that here
        if err != errno.EAGAIN:
            raise OSError(err, os.strerror(err), rel)
    return None


def _open_beneath(dirfd: int, parts: tuple[str, ...], flags: int) -> int:
    """The descriptor of ``parts`` under ``dirfd``; no link is followed on any component."""
    if not parts:
        return os.dup(dirfd)
    fd = _openat2(dirfd, "/".join(parts), flags)
    if fd is not None:
        return fd
    cur = dirfd
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR, dir_fd=cur)
            if cur != dirfd:
                os.close(cur)
            cur = nxt
        return os.open(parts[-1], flags, dir_fd=cur)
    finally:
        if cur != dirfd:
            os.close(cur)


def _why(exc: OSError, name: str) -> UnsafeFileError:
    if exc.errno in (errno.ELOOP, errno.EXDEV):
        return UnsafeFileError(
            exc.errno, f"{name} is a link or passes through one; links are not followed"
        )
    if exc.errno == errno.ENOTDIR:
        return UnsafeFileError(exc.errno, f"{name} passes through something that is not a folder")
    return UnsafeFileError(
        exc.errno or errno.EIO, f"{name} cannot be opened: {exc.strerror or exc}"
    )


@contextlib.contextmanager
def open_dir(
    root: Path | str, parts: tuple[str, ...] = (), *, create: bool = False
) -> Iterator[int]:
    """A descriptor of ``root/parts...``; a link as ``root`` or on the way raises ``OSError``
    (never followed); ``create`` makes missing folders (mode 0755)."""
    fd = os.open(root, _DIR)
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part:
                raise UnsafeFileError(errno.EPERM, f"unsafe path component {part!r}")
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def open_file(
    path: Path | str | DataPath, *, root: Path | str | None = None, max_bytes: int | None = None
) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file ``path`` and its ``fstat``.

    A :class:`~omnilab._datapath.DataPath` (a path named by data) is always opened beneath its
    root without following any link. With ``root`` (or when ``path`` lies in a folder marked
    untrusted), ``path`` (relative to ``root``, or absolute inside it) is opened beneath it
    without following any link. Otherwise
    links are followed (a user's own files) but a FIFO or device is still refused. Raises
    :class:`UnsafeFileError` with a one-line reason.
    """
    rel: str | None = None
    if isinstance(path, DataPath):
        name, root, rel = str(path.shown()), path.root, path.rel
    elif root is None:
        name = str(path)
        found = untrusted_root(name)
        if found is not None:
            root, rel = found
    elif (name := str(path)).startswith("/"):
        top = os.path.abspath(root)  # noqa: PTH100 - lexical
        full = os.path.abspath(name)  # noqa: PTH100
        if not full.startswith(top.rstrip("/") + "/"):
            raise UnsafeFileError(errno.EPERM, f"{name} is outside {root}")
        rel = full[len(top.rstrip("/")) + 1 :]
    else:
        rel = name
    return _checked(_open_named(name, root, rel), name, max_bytes)


def _open_named(name: str, root: Path | str | None, rel: str | None) -> int:
    try:
        if root is None or rel is None:
            fd = os.open(name, _FILE & ~os.O_NOFOLLOW)
        else:
            parts = _parts(rel)
            if not parts:
                raise UnsafeFileError(errno.EISDIR, f"{name} is a folder, not a file")
            top_fd = os.open(root, _DIR & ~os.O_NOFOLLOW)
            try:
                fd = _open_beneath(top_fd, parts, _FILE)
            finally:
                os.close(top_fd)
    except UnsafeFileError:
        raise
    except OSError as exc:
        raise _why(exc, name) from None
    return fd


def _checked(fd: int, name: str, max_bytes: int | None) -> tuple[int, os.stat_result]:
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = f"{name} is not a regular file"
    elif max_bytes is not None and st.st_size > max_bytes:
        problem = f"{name} is larger than {_size(max_bytes)} ({_size(st.st_size)})"
    if problem is not None:
        os.close(fd)
        raise UnsafeFileError(errno.EPERM, problem)
    return fd, st


def _size(n: int) -> str:
    return f"{n / 1024**2:.0f} MB" if n >= 1024**2 else f"{n} bytes"


def read_bytes(
    path: Path | str | DataPath,
    *,
    root: Path | str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> bytes:
    """The bytes of the regular file ``path`` (rules of :func:`open_file`), at most
    ``max_bytes`` (a file that grows past it while read is refused too)."""
    fd, st = open_file(path, root=root, max_bytes=max_bytes)
    with os.fdopen(fd, "rb", buffering=0) as f:
        # Sized by fstat (a read of max_bytes would allocate that much); one byte more shows
        # a file that grew since, which is then read on up to the limit.
        data = f.read(st.st_size + 1)
        if len(data) > st.st_size:
            data += f.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise UnsafeFileError(errno.EFBIG, f"{path} is larger than {_size(max_bytes)}")
    return data


def regular_file(path: Path | str | DataPath, *, root: Path | str | None = None) -> bool:
    """Whether ``path`` is a regular file :func:`open_file` would open (``Path.is_file`` for
    paths that may lie in a workspace)."""
    try:
        fd, _ = open_file(path, root=root)
    except OSError:
        return False
    os.close(fd)
    return True


def copy_to(
    path: Path | str | DataPath,
    target: IO[bytes],
    *,
    root: Path | str | None = None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
) -> int:
    """Copies the regular file ``path`` into the open ``target`` (``max_bytes`` None: any
    size); returns the bytes copied."""
    fd, _ = open_file(path, root=root, max_bytes=max_bytes)
    try:
        name = str(path.shown()) if isinstance(path, DataPath) else str(path)
        return copy_open(fd, target, name=name, max_bytes=max_bytes)
    finally:
        os.close(fd)


def copy_open(fd: int, target: IO[bytes], *, name: str, max_bytes: int | None = None) -> int:
    """Copies the open regular file ``fd`` (from :func:`open_file`) into ``target`` from its
    start, holes as holes when ``target`` is a file on disk (only data regions are read and
    written, the length set at the end): a sparse file planted by someone else costs the copy
    no more disk than it cost them. Returns the bytes read from ``fd``."""
    size = os.fstat(fd).st_size
    sparse = _regular_target(target)
    total = pos = 0
    while True:
        start, end = _data_region(fd, pos) if sparse else (pos, None)
        if start is None:
            break
        if sparse and start != pos:
            target.seek(start)
        pos = start
        while end is None or pos < end:
            chunk = os.pread(fd, _CHUNK if end is None else min(_CHUNK, end - pos), pos)
            if not chunk:
                break
            total, pos = total + len(chunk), pos + len(chunk)
            if max_bytes is not None and total > max_bytes:
                raise UnsafeFileError(errno.EFBIG, f"{name} is larger than {_size(max_bytes)}")
            target.write(chunk)
        if end is None or pos < end:
            break  # the end of the file (it may have shrunk)
    if sparse and target.tell() < size:
        target.truncate(size)  # a hole up to the length fstat gave
    return total


def _regular_target(target: IO[bytes]) -> bool:
    """Whether ``target`` is a file on disk (one a hole can be left in)."""
    try:
        return stat.S_ISREG(os.fstat(target.fileno()).st_mode) and target.seekable()
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
        return False


def _data_region(fd: int, pos: int) -> tuple[int | None, int | None]:
    """The next data region at or after ``pos`` (start, end); ``(None, None)`` when only a hole
    is left; ``(pos, None)`` where the file system cannot say (read to the end)."""
    try:
        start = os.lseek(fd, pos, os.SEEK_DATA)
        end = os.lseek(fd, start, os.SEEK_HOLE)
    except OSError as e:
        return (None, None) if e.errno == errno.ENXIO else (pos, None)
    return (start, end) if end > start else (pos, None)


# -- images ------------------------------------------------------------------------------------


def check_pixels(image: PILImage.Image, name: str, max_pixels: int = MAX_PIXELS) -> None:
    """Refuses an image (opened, not yet decoded) whose header says more than ``max_pixels``."""
    width, height = image.size
    if width * height > max_pixels:
        raise UnsafeFileError(
            errno.EFBIG,
            f"{name} is {width}x{height} pixels, more than the {max_pixels // 1_000_000} MP "
            "allowed; shrink it first",
        )


def open_image(
    source: Path | str | bytes | DataPath,
    *,
    root: Path | str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_pixels: int = MAX_PIXELS,
    name: str | None = None,
) -> PILImage.Image:
    """An opened (lazy, not decoded) Pillow image from a file (rules of :func:`open_file`) or
    bytes, refused before decoding when its header says more than ``max_pixels``."""
    import io

    from PIL import Image as PILImage

    if isinstance(source, bytes):
        data, label = source, name or f"image ({len(source)} bytes)"
    else:
        shown = source.shown() if isinstance(source, DataPath) else source
        data, label = read_bytes(source, root=root, max_bytes=max_bytes), name or str(shown)
    with warnings.catch_warnings():
        # Pillow's own bomb check warns (or raises past twice its limit); ours decides.
        warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
        try:
            image = PILImage.open(io.BytesIO(data))
        except PILImage.DecompressionBombError as exc:
            raise UnsafeFileError(errno.EFBIG, f"{label} has too many pixels ({exc})") from None
    try:
        check_pixels(image, label, max_pixels)
    except UnsafeFileError:
        image.close()
        raise
    return image
