"""A workspace's size total, fixed for its life.

The first time a workspace is moved into its tmpfs, its total is its size then plus
``workspace_bytes`` (and inodes likewise). The total is recorded beside the tmpfs's mount point
(the harness's private state folder) and every later mount of the same workspace folder uses it
again: a shell or interpreter restart (which ends the workspace's last sandbox and starts a new
one) must not hand sandboxed code another ``workspace_bytes``. A record names the folder's inode,
so a workspace folder removed and made again under the same path starts afresh; records of
workspaces that no longer exist are dropped when a new one is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from pathlib import Path

__all__ = ["record_total", "recorded_total", "tmpfs_bytes"]

_PRUNE_EVERY = 64


def _record(private: Path) -> Path:
    return private.with_name(private.name + ".total")


def _identity(ws: str) -> int | None:
    try:
        return os.lstat(ws).st_ino
    except OSError:
        return None


def recorded_total(private: Path, ws: str) -> tuple[int, int] | None:
    """The (bytes, inodes) recorded for this workspace folder, or None the first time."""
    try:
        data = json.loads(_record(private).read_text())
        if data["ws"] == ws and data["ino"] == _identity(ws):
            return int(data["bytes"]), int(data["inodes"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def record_total(private: Path, ws: str, space: int, inodes: int) -> None:
    """Records the workspace's total (written atomically in the private state folder)."""
    target = _record(private)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = {"ws": ws, "ino": _identity(ws), "bytes": space, "inodes": inodes}
    tmp = target.with_name(f".{target.name}-{uuid.uuid4().hex}")
    tmp.write_text(json.dumps(data))
    tmp.replace(target)
    if uuid.uuid4().int % _PRUNE_EVERY == 0:
        _prune(target.parent)


def _prune(folder: Path) -> None:
    """Drops records whose workspace folder is gone (not the mounted ones: their folder is)."""
    for record in folder.glob("*.total"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            data = json.loads(record.read_text())
            if _identity(str(data["ws"])) != data["ino"]:
                record.unlink()


def tmpfs_bytes(private: Path) -> int | None:
    """The size of the tmpfs mounted at ``private`` (its total), None when it cannot be read."""
    try:
        st = os.statvfs(private)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize
