"""The workspace on the harness's side: prepared without following links, and (harness root)
held in a size- and inode-limited tmpfs while sandboxes use it.

The tmpfs is mounted at a private folder (under the uid table's folder) and bound over the
workspace, so the harness and its tools keep using the workspace's own path; what was in the
workspace is copied in first. When the last sandbox of the workspace ends, the contents are
copied back (links as links) and the tmpfs goes. A harness that crashed leaves the mount; the next
sandbox started on the machine copies it back (see :mod:`._uids`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

from omnilab._wsread import mark_untrusted
from omnilab._wswalk import walk
from omnilab.sandbox import _procs
from omnilab.sandbox._launcher_fs import _mount
from omnilab.sandbox._safefs import (
    chown_tree,
    copy_tree,
    open_folder,
    remove_children,
    replace_with_folder,
)
from omnilab.sandbox._types import SandboxError
from omnilab.sandbox._uids import state_dir
from omnilab.sandbox._wstotal import record_total, recorded_total, tmpfs_bytes

__all__ = [
    "check_workspace",
    "mount_workspace",
    "prepare_workspace",
    "release_workspace",
    "size_limited",
]

_MS_NOSUID, _MS_NODEV, _MS_BIND = 0x2, 0x4, 0x1000
_MNT_DETACH = 2


def check_workspace(workspace: Path | str) -> Path:
    """The workspace as an absolute path, if it is one a sandbox may use."""
    path = Path(workspace)
    if not path.is_absolute():
        path = path.resolve()
    if not path.is_dir():
        raise SandboxError(f"sandbox workspace {path} is not an existing folder; create it first")
    if path.resolve() in (Path("/"), Path.home().resolve()):
        raise SandboxError(f"sandbox workspace {path} is too broad; use a folder of its own")
    return path.resolve()


def prepare_workspace(
    workspace: Path | str, ids: tuple[int, int] | None = None, problems: list[str] | None = None
) -> Path:
    """Checks the workspace, makes its ``tmp`` a real folder (a planted link or file there is
    replaced, not followed) and hands everything to the sandbox uid without following links
    (what could not be handed over is added to ``problems``). From here on the harness reads
    the workspace only through :mod:`omnilab._wsread`'s rules."""
    path = check_workspace(workspace)
    mark_untrusted(path)
    with open_folder(path) as fd:
        replace_with_folder(fd, "tmp", 0o700 if ids is not None else 0o755)
    if ids is not None:
        failed = chown_tree(path, *ids)
        if problems is not None:
            problems += [f"workspace {path}: {line}" for line in failed]
        path.chmod(0o700)
    return path


def size_limited(ws: Path) -> bool:
    """Whether the workspace is in its size-limited tmpfs now."""
    return os.path.ismount(_private(str(ws))) and os.path.ismount(ws)


def _private(ws: str) -> Path:
    return state_dir() / "ws" / hashlib.sha256(ws.encode()).hexdigest()[:24]


def _usage(root: Path, cap: int) -> tuple[int, int]:
    """Bytes and entries under ``root``, counting stops past ``cap`` bytes. A file counts at
    the larger of its apparent size and its blocks (a sparse file at its full length), a link
    at its length; folders take no room in a tmpfs (their blocks on disk are not counted, or
    each restart would add them to the total)."""
    size = count = 0
    for folder in walk(root):
        for _name, st in folder.entries:
            if stat.S_ISREG(st.st_mode):
                size += max(st.st_blocks * 512, st.st_size)
            elif stat.S_ISLNK(st.st_mode):
                size += st.st_size
            count += 1
        if size > cap:
            break
    return size, count


def _umount(path: str) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(os.fsencode(path), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount {path}: {os.strerror(err)}")


def mount_workspace(ws: str, *, max_bytes: int, max_inodes: int) -> None:
    """Moves the workspace into a tmpfs of its size when first mounted plus ``max_bytes`` (and
    inodes): the total is fixed for the workspace's life (see :mod:`._wstotal`), so restarting
    a shell or interpreter never grows it."""
    private = _private(ws)
    if os.path.ismount(private) and os.path.ismount(ws):
        return  # left by a harness that died: its data is there, keep using it
    size, count = _usage(Path(ws), max_bytes)
    total = recorded_total(private, ws)
    if total is None and size > max_bytes:
        return  # already bigger than the limit: not copied into memory (reported missing)
    space, inodes = total or (size + max_bytes, count + max_inodes + 16)
    record_total(private, ws, space, inodes)
    # Files the harness itself added since (never the sandbox) get room, nothing more.
    space, inodes = max(space, size), max(inodes, count + 16)
    private.mkdir(mode=0o700, parents=True, exist_ok=True)
    options = f"size={space},nr_inodes={inodes},mode=700"
    _mount("omnilab-workspace", str(private), "tmpfs", _MS_NOSUID | _MS_NODEV, options)
    try:
        with open_folder(Path(ws)) as src, open_folder(private) as dst:
            _, _, failed = copy_tree(src, dst)
        if failed:
            # Not everything would be in the tmpfs: run on the folder itself instead.
            raise OSError(f"cannot copy the workspace into its tmpfs: {failed[0]}")
        _mount(str(private), ws, None, _MS_BIND)
    except BaseException:
        with contextlib.suppress(OSError):
            _umount(str(private))
        raise


def release_workspace(ws: str, uid: int, *, kill: bool = True) -> list[str]:
    """After the workspace's last sandbox: kills what its uid left running (``kill``), copies
    the tmpfs back into the workspace folder and takes the workspace away from that uid.
    Returns what went wrong (one line each), for the result's warnings. The tmpfs stays
    mounted only when its files could not all be copied back (nothing is lost; the next
    release tries again)."""
    if kill:
        _procs.kill_processes(_procs.pids_of_uid(uid))
    problems: list[str] = []
    private = _private(ws)
    if os.path.ismount(private):
        if os.path.ismount(ws):
            _umount(ws)
        refused: list[str] = []
        with open_folder(Path(ws)) as dst:
            problems += remove_children(dst)
            with open_folder(private) as src:
                # Apparent sizes against the tmpfs's total: sparse files cannot grow the copy
                # past what the workspace may hold (they are copied sparse besides).
                _, _, failed = copy_tree(src, dst, max_bytes=tmpfs_bytes(private), refused=refused)
        problems += failed + refused
        if failed:
            # Keep every file reachable at the workspace's path; a later release tries again.
            _mount(str(private), ws, None, _MS_BIND)
            problems.append(f"its files stay in the tmpfs {private} until a later release")
        else:
            _umount(str(private))
            with contextlib.suppress(OSError):
                private.rmdir()
    with contextlib.suppress(FileNotFoundError):
        # A later sandbox may get this uid again: it must not reach this workspace.
        folder = Path(ws)
        if stat.S_ISDIR(folder.lstat().st_mode):
            os.chown(folder, os.geteuid(), os.getegid(), follow_symlinks=False)
            folder.chmod(0o700)
    return [f"workspace {ws}: {line}" for line in problems]
