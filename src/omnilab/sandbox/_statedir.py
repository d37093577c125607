"""The harness's own folder for state shared by its processes (the uid table, the workspace
tmpfs mount points): one per user, made 0700 by that user, and checked on every use.

In a shared folder (``/dev/shm``, the temporary directory) another local user can create the
name first: a folder of theirs (feeding a forged table), a link, or a file (a denial of
service). Such a squatter is never used. Root moves it aside (it may rename anything in a sticky
folder) and makes its own; another user cannot, and uses a private folder in its home instead.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import uuid
from pathlib import Path

from omnilab.sandbox._types import SandboxError

__all__ = ["is_private", "own_folder"]

_TRIES = 3


def is_private(path: Path) -> bool:
    """Whether ``path`` is a real folder (not a link) of this user that nobody else can use."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def _safe_parent(path: Path) -> bool:
    """Whether only root (or this user) can create or replace names in ``path``."""
    try:
        st = path.lstat()
    except OSError:
        return False
    owner_ok = st.st_uid in (0, os.geteuid())
    return stat.S_ISDIR(st.st_mode) and owner_ok and not st.st_mode & 0o022


def _shared() -> Path:
    euid = os.geteuid()
    shm = Path("/dev/shm")  # noqa: S108 - a private 0700 folder, checked in own_folder
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
    return base / f"omnilab-sandbox-{euid}"


def _candidates() -> list[Path]:
    euid = os.geteuid()
    found: list[Path] = []
    if euid == 0 and os.path.ismount("/run") and _safe_parent(Path("/run")):
        found.append(Path("/run/omnilab"))
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    # Not for root: its uid table must be one for every harness of the machine, whichever
    # session (login, cron, sudo) started it.
    if euid != 0 and runtime and Path(runtime).is_absolute() and is_private(Path(runtime)):
        found.append(Path(runtime) / "omnilab-sandbox")
    found.append(_shared())
    return found


def _make(folder: Path) -> bool:
    """Makes ``folder`` 0700 unless it is there; True when it is then a private folder of ours.
    Root moves a squatter (anything not its private folder) aside first."""
    for _ in range(_TRIES):
        with contextlib.suppress(FileExistsError, FileNotFoundError):
            folder.mkdir(mode=0o700)
        if is_private(folder):
            return True
        if os.geteuid() != 0 or _safe_parent(folder.parent):
            return False  # not ours to move: a folder only root and we can write holds it
        aside = folder.with_name(f".omnilab-squatted-{uuid.uuid4().hex}")
        try:
            folder.rename(aside)  # a link or a file is moved as itself, never followed
        except OSError:
            return False
    return False


def own_folder() -> Path:
    """This user's state folder, made private and checked (a squatted name is passed over);
    a :class:`SandboxError` when no candidate can be made private."""
    tried = _candidates()
    for folder in tried:
        if _make(folder):
            return folder
    home = Path.home() / ".cache" / "omnilab" / "sandbox-state"
    with contextlib.suppress(OSError):
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if is_private(home):
        return home
    raise SandboxError(
        f"no private state folder for the sandbox: {', '.join(map(str, tried))} and {home} are "
        "someone else's or not private folders; remove the ones you do not own"
    )
