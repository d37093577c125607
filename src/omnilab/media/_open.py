"""Opening files safely: every failure of the filesystem or FFmpeg becomes a :class:`MediaError`.

A file in a workspace that sandboxed code can write (a folder marked with
:func:`omnilab._wsread.mark_untrusted`) is opened by :mod:`omnilab._wsread`'s rules: beneath the
workspace, through no link, only if it is a regular file. FFmpeg then reads that very descriptor
(``/proc/self/fd/N``), so a name swapped for a link or a FIFO after the check cannot redirect
or block it. Other files (the user's own, the media cache) are opened by name.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from omnilab import _wsread
from omnilab.media.errors import MediaError, MediaErrorCode

if TYPE_CHECKING:
    # PyAV loads on first open (~0.1 s): fetching inputs at URLs imports this package, not FFmpeg.
    import av.container
    import av.stream

__all__ = [
    "check_file",
    "fd_source",
    "is_text_head",
    "looks_like_text",
    "only_read",
    "open_bytes",
    "open_input",
]

# Where a descriptor can be opened again by name (Linux): FFmpeg reads the checked file itself.
_FD_DIR = "/proc/self/fd"


def open_bytes(path: Path) -> IO[bytes]:
    """``path`` opened for reading by :mod:`omnilab._wsread`'s rules (beneath its workspace
    through no link when it lies in one; a FIFO or device is refused either way)."""
    try:
        fd, _ = _wsread.open_file(path)
    except OSError as e:
        raise _unreadable(path, e) from e
    return os.fdopen(fd, "rb")


def _unreadable(path: Path, err: OSError) -> MediaError:
    if err.errno == errno.ENOENT:
        return MediaError(MediaErrorCode.NOT_FOUND, f"{path} does not exist", path=path)
    return MediaError(MediaErrorCode.UNSUPPORTED, f"{path.name}: {err}", path=path)


def check_file(path: str | Path) -> Path:
    """Resolve ``path`` and reject what cannot be a media file before any decoder sees it."""
    p = Path(path).expanduser()
    if _wsread.untrusted_root(p) is not None:
        # ``exists``/``is_file`` would follow a planted link, and ``probe`` resolves the path.
        with open_bytes(p) as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise MediaError(MediaErrorCode.CORRUPT, f"{p.name} is empty (0 bytes)", path=p)
        return p
    if not p.exists():
        raise MediaError(MediaErrorCode.NOT_FOUND, f"{p} does not exist", path=p)
    if p.is_dir():
        raise MediaError(
            MediaErrorCode.UNSUPPORTED, f"{p} is a directory, not a media file", path=p
        )
    if not p.is_file():
        raise MediaError(MediaErrorCode.UNSUPPORTED, f"{p} is not a regular file", path=p)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise MediaError(
            MediaErrorCode.NOT_FOUND, f"{p} cannot be read: {e.strerror}", path=p
        ) from e
    if size == 0:
        raise MediaError(MediaErrorCode.CORRUPT, f"{p.name} is empty (0 bytes)", path=p)
    return p


def looks_like_text(path: Path) -> bool:
    """True when the file starts like text (so a failed open means 'wrong kind', not 'damaged')."""
    try:
        with open_bytes(path) as f:
            head = f.read(1024)
    except (OSError, MediaError):
        return False
    return is_text_head(head)


def is_text_head(head: bytes) -> bool:
    """True when ``head`` (a file's first KiB) reads as text."""
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        # A multi-byte character cut by the 1 KiB window is still text.
        return e.start >= len(head) - 4
    return True


def _reason(err: BaseException) -> str:
    # FFmpeg errors put the file path after the reason; the reason alone is what helps.
    strerror = getattr(err, "strerror", None)
    return str(strerror) if strerror else (str(err) or type(err).__name__)


def _open_failure(path: Path, err: Exception) -> MediaError:
    if looks_like_text(path):
        return MediaError(
            MediaErrorCode.UNSUPPORTED,
            f"{path.name} is a text file, not audio, video or an image",
            path=path,
        )
    reason = _reason(err)
    return MediaError(
        MediaErrorCode.CORRUPT,
        f"{path.name} cannot be decoded (damaged or not a media file: {reason})",
        path=path,
    )


def only_read(container: av.container.InputContainer, stream: av.stream.Stream) -> None:
    """Have the demuxer drop every other stream's packets before they become Python objects.

    ``demux(stream)`` alone still reads each packet of the file into a Packet and throws the
    others away; a 30-minute video's soundtrack is 77,000 packets to read past when only the
    pictures are wanted (and 45,000 pictures past the sound).
    """
    import av.stream

    discard = getattr(av.stream, "Discard", None)  # settable from PyAV 15 on
    if discard is None:
        return
    for other in container.streams:
        if other.index != stream.index:
            other.discard = discard.all


def fd_source(f: IO[bytes]) -> str | IO[bytes]:
    """What FFmpeg opens to read the open file ``f`` itself: its ``/proc/self/fd/N`` name, or
    (without /proc) the file object (slower, just as safe)."""
    fd_name = f"{_FD_DIR}/{f.fileno()}"
    return fd_name if Path(fd_name).exists() else f


@contextmanager
def open_input(
    path: Path, *, held_file: IO[bytes] | None = None
) -> Iterator[av.container.InputContainer]:
    """Open ``path`` for demuxing; errors while opening *or inside the block* become MediaError.

    ``held_file``: ``path`` already opened (and checked) by the caller; FFmpeg reads that
    very file, and ``path`` only names it in messages."""
    import av

    held: IO[bytes] | None = None
    source: str | IO[bytes] = str(path)
    if held_file is not None:
        held_file.seek(0)
        source = fd_source(held_file)
    elif _wsread.untrusted_root(path) is not None:
        held = open_bytes(path)
        source = fd_source(held)
    try:
        container = av.open(source, mode="r", metadata_errors="ignore")
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as e:
        if held is not None:
            held.close()
        raise _open_failure(path, e) from e
    for stream in container.streams.video:
        # The header's size is checked before decoding (check_video_pixels: a header over the
        # limit is refused there, by name), but a stream may change size later (a new H.264
        # SPS): the decoder itself then refuses the larger pictures.
        codec = stream.codec_context
        if codec is not None and (codec.width or 0) * (codec.height or 0) <= _wsread.MAX_PIXELS:
            codec.options = {**codec.options, "max_pixels": str(_wsread.MAX_PIXELS)}
    try:
        yield container
    except (av.FFmpegError, EOFError) as e:
        raise MediaError(
            MediaErrorCode.CORRUPT,
            f"{path.name} is damaged: decoding failed ({_reason(e)})",
            path=path,
        ) from e
    finally:
        container.close()
        if held is not None:
            held.close()
