"""How each isolation level is built: the wrapper command line and the file-system view.

The same plan (scratch tmpfs, masked folders, bound-back paths) is realised by bubblewrap's
options at the ``bwrap`` level and by our launcher (:mod:`._launcher`) at the ``namespaces``
level, so both levels show sandboxed code the same machine.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from omnilab.config import config_file
from omnilab.sandbox._types import IsolationLevel

__all__ = [
    "DEV_NODES",
    "SYSTEM_DIRS",
    "MountPlan",
    "closed_ancestor",
    "mount_plan",
    "wrapper_argv",
]

# Writable, private, vanishing: programs expect to write temporary files here.
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - replaced by private tmpfs, not used
_SCRATCH_BYTES = 256 * 1024**2
# Hidden: homes hold keys (~/.ssh, ~/.netrc, cloud credentials); /run holds daemon sockets
# (docker, dbus, databases) that a network namespace does not cut off.
_MASKED = ("/root", "/home", "/run", "/var/run", "/mnt", "/media", "/srv")


@dataclass
class MountPlan:
    """What sandboxed code sees besides the read-only root."""

    scratch: list[str] = field(default_factory=list)
    """Fresh writable tmpfs (mode 1777), gone when the sandbox ends."""

    masks: list[str] = field(default_factory=list)
    """Folders replaced by an empty read-only tmpfs."""

    binds: list[tuple[str, bool]] = field(default_factory=list)
    """Paths bound back at the same place (path, writable): the workspace and what lies under a
    mask but is needed (the Python install)."""

    def launcher_config(self) -> dict[str, object]:
        """The plan as the launcher's ``mounts`` config (``namespaces`` level)."""
        return {
            "scratch": [[p, _SCRATCH_BYTES] for p in self.scratch],
            "masks": self.masks,
            "binds": [[p, rw] for p, rw in self.binds],
            "proc": True,
            "dev": DEV_NODES,
        }

    def bwrap_args(self) -> list[str]:
        """The plan as bubblewrap options, in mount order."""
        args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for path in sorted([*self.scratch, *self.masks], key=_depth):
            mode, size = ("1777", _SCRATCH_BYTES) if path in self.scratch else ("0755", 1024**2)
            args += ["--perms", mode, "--size", str(size), "--tmpfs", path]
        hidden = [*self.scratch, *self.masks]
        made: set[str] = set()
        for path, rw in sorted(self.binds, key=lambda b: _depth(b[0])):
            # bubblewrap would create the folders leading to a bind point as 0700 (root's), which
            # the sandbox uid could not pass; create them 0755 first.
            for parent in reversed(Path(path).parents):
                folder = str(parent)
                if folder not in made and _under(folder, hidden) and folder not in hidden:
                    args += ["--perms", "0755", "--dir", folder]
                    made.add(folder)
            args += ["--bind" if rw else "--ro-bind", path, path]
        return args


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _under(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


# Never masked: the system the sandbox runs on (a harness started in / or /usr must not hide it).
SYSTEM_DIRS = {"/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
           "/var", "/sys", "/proc", "/dev", "/tmp", "/usr/local", "/usr/lib", "/usr/bin"}  # fmt: skip  # noqa: S108
DEV_NODES = ["null", "zero", "full", "random", "urandom", "tty"]


def _prefixes() -> list[str]:
    return sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)})


@cache
def _python_paths() -> list[str]:
    """Folders the sandboxed Python needs: its install prefixes and the import path entries
    inside them (standard library, site-packages). Entries elsewhere (the harness's working
    directory, its script folder, source checkouts, PYTHONPATH) are never bound back."""
    prefixes = _prefixes()
    paths = set(prefixes)
    paths.add(str(Path(os.path.realpath(sys.executable)).parent.parent))
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and Path(real).is_dir() and _under(real, prefixes):
            paths.add(real)
    return sorted(paths)


@cache
def _package_folder() -> str:
    """omnilab's own package folder. An editable install keeps it in a source checkout, which
    is masked like any private folder; binding back just this folder (read-only, code only:
    not the checkout's other files) lets ``omnilab media ...`` and ``omnilab digest`` run
    inside, as they do for a regular install."""
    import omnilab

    return os.path.realpath(Path(omnilab.__file__).parent)


def _private_folders(workspace: str) -> list[str]:
    """Folders of the harness that sandboxed code must not see: its working directory, its
    script's folder, the folder of its configuration file, and the folder holding the
    workspace (other tasks' workspaces)."""
    found = [Path.cwd(), config_file().absolute().parent, Path(workspace).parent]
    if sys.argv and sys.argv[0] not in ("", "-c", "-m"):
        found.append(Path(sys.argv[0]).absolute().parent)
    private = []
    for folder in (os.path.realpath(f) for f in found):
        inside_ws = _under(folder, [workspace])
        if folder not in SYSTEM_DIRS and not inside_ws and Path(folder).is_dir():
            private.append(folder)
    return private


def _real_dir(path: str) -> bool:
    return Path(path).is_dir() and not Path(path).is_symlink()


def closed_ancestor(path: str) -> str | None:
    """The highest folder above ``path`` that a stranger (other uid) cannot enter."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        folder = str(Path(*parts[:i]))
        try:
            mode = Path(folder).stat().st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return folder
    return None


def mount_plan(workspace: Path, *, as_stranger: bool) -> MountPlan:
    """The file-system view for a sandbox in ``workspace``.

    ``as_stranger``: sandboxed code runs under a uid of its own, so folders it could not enter
    (mode without o+x) on the way to a needed path are masked, and the path bound back below.
    """
    plan = MountPlan()
    plan.scratch = [p for p in _SCRATCH if _real_dir(p)]
    masks = [p for p in _MASKED if _real_dir(p)]
    home = os.path.realpath(Path.home())
    ws = os.path.realpath(workspace)
    for folder in [home, *_private_folders(ws)]:
        if folder not in SYSTEM_DIRS and Path(folder).is_dir() and not _under(folder, masks):
            # A deeper mask under a new one is redundant; drop it.
            masks = [m for m in masks if not _under(m, [folder])] + [folder]
    needed = [(ws, True)] + [(p, False) for p in _python_paths() if not _under(p, [ws])]
    package = _package_folder()
    if not _under(package, [p for p, _ in needed]):
        needed.append((package, False))
    # A resolver config that lives under /run (systemd-resolved) must stay readable.
    resolv = os.path.realpath("/etc/resolv.conf")
    if resolv.startswith("/run/") and Path(resolv).exists():
        needed.append((str(Path(resolv).parent), False))
    if as_stranger:
        for path, _ in needed:
            closed = closed_ancestor(path)
            if closed and not _under(closed, masks + plan.scratch):
                masks.append(closed)
    plan.masks = masks
    hidden = plan.masks + plan.scratch
    # Bind back what a mask hides (and always the workspace, which must be writable).
    plan.binds = [(p, rw) for p, rw in needed if rw or _under(p, hidden)]
    return plan


def wrapper_argv(
    level: IsolationLevel, *, network: bool, plan: MountPlan, workspace: Path
) -> list[str]:
    """The command that puts the launcher into its namespaces (empty at the ``process`` level)."""
    if level is IsolationLevel.PROCESS:
        return []
    if level is IsolationLevel.NAMESPACES:
        argv = [shutil.which("unshare") or "unshare", "--mount", "--pid", "--ipc", "--uts"]
        argv += ["--fork", "--kill-child", "--propagation", "private"]
        if os.geteuid() != 0:
            argv += ["--user", "--map-root-user"]
        if not network:
            argv.append("--net")
        return [*argv, "--"]
    argv = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-pid"]
    argv += ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        argv.append("--unshare-net")
    argv += plan.bwrap_args()
    argv += ["--chdir", str(workspace)]
    return [*argv, "--"]
