"""Totals per sandbox with cgroups: memory of all its processes, their number, the CPUs they
keep busy, and the CPU time of the whole tree, read by the harness.

cgroup v2 is used where it has the controller; on hybrid machines (v1 controllers beside a v2
tree that only accounts) each controller comes from v1 instead. A sandbox's cgroups are created
by the harness under ``omnilab/`` (v2: at the root of the tree, where controllers can be
delegated; v1: under the harness's own cgroup, so a machine-wide limit on the harness still
applies); the launcher joins them through descriptors the harness opened, before anything else
runs. What cannot be set up here is reported by name (:func:`missing_totals`), never silently
dropped.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from omnilab.config import SandboxLimits

__all__ = ["TOTALS", "SandboxCgroup", "cgroup_status", "missing_totals"]

TOTALS = {
    "memory": "memory of all the sandbox's processes together",
    "processes": "number of the sandbox's processes together",
    "cpu rate": "CPUs the sandbox keeps busy at once",
    "cpu time": "CPU time of the whole process tree, counted by the harness",
}
_V1 = {"memory": "memory", "processes": "pids", "cpu rate": "cpu", "cpu time": "cpuacct"}
_V2 = {"memory": "memory", "processes": "pids", "cpu rate": "cpu"}
_PERIOD_US = 100_000
_counter = itertools.count()


@dataclass
class _Layout:
    """Where each total's cgroup goes: the parent folder and whether it is v2."""

    parents: dict[str, tuple[Path, bool]] = field(default_factory=dict)
    v2: Path | None = None
    """The v2 parent (accounting and ``cgroup.kill`` even without controllers)."""
    why: dict[str, str] = field(default_factory=dict)


def _mounts() -> tuple[Path | None, dict[str, Path]]:
    v2: Path | None = None
    v1: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, _source, options = [*right.split(), "", "", ""][:3]
            point = Path(left.split()[4].replace("\\040", " "))
            if fstype == "cgroup2" and v2 is None:
                v2 = point
            elif fstype == "cgroup":
                for opt in options.split(","):
                    if opt in _V1.values():
                        v1.setdefault(opt, point)
    return v2, v1


def _own_paths() -> dict[str, str]:
    """The harness's cgroup per v1 controller, and under ``""`` its v2 cgroup."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                own[name] = path
    return own


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
    except OSError:
        return False
    return True


def _mkdir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return True


@cache
def _layout() -> _Layout:
    layout = _Layout()
    v2_mount, v1_mounts = _mounts()
    own = _own_paths()
    if v2_mount is not None:
        parent = v2_mount / "omnilab"
        if _mkdir(parent):
            layout.v2 = parent
            offered = set((v2_mount / "cgroup.controllers").read_text().split())
            for total, controller in _V2.items():
                if controller in offered:
                    # Delegate to our folder and from it to each sandbox's cgroup.
                    _write(v2_mount / "cgroup.subtree_control", f"+{controller}")
                    if _write(parent / "cgroup.subtree_control", f"+{controller}"):
                        layout.parents[total] = (parent, True)
        else:
            layout.why["v2"] = f"cannot create {parent} (not root, or no delegation)"
        if layout.v2 is not None:
            # cpu.stat counts every v2 cgroup's CPU time, with or without the cpu controller.
            layout.parents.setdefault("cpu time", (layout.v2, True))
    for total, controller in _V1.items():
        if total in layout.parents or controller not in v1_mounts:
            continue
        base = v1_mounts[controller] / own.get(controller, "/").lstrip("/") / "omnilab"
        if _mkdir(base):
            layout.parents[total] = (base, False)
        else:
            layout.why[total] = f"cannot create {base}"
    _sweep(layout)
    return layout


def _sweep(layout: _Layout) -> None:
    """Removes the cgroups of sandboxes whose harness died (``sb-<pid>-...``)."""
    parents = {p for p, _ in layout.parents.values()} | ({layout.v2} if layout.v2 else set())
    for parent in parents:
        with contextlib.suppress(OSError):
            for entry in parent.iterdir():
                pid = entry.name.split("-")[1] if entry.name.startswith("sb-") else ""
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    _kill_members(entry)
                    with contextlib.suppress(OSError):
                        entry.rmdir()


def missing_totals() -> list[str]:
    """Totals that cannot be enforced (or counted) on this machine, by name."""
    layout = _layout()
    return [name for name in TOTALS if name not in layout.parents]


def cgroup_status() -> dict[str, str]:
    """For ``omnilab doctor``: each total and where it comes from, or why it is missing."""
    layout = _layout()
    status = {}
    for name in TOTALS:
        if name in layout.parents:
            parent, v2 = layout.parents[name]
            status[name] = f"cgroup {'v2' if v2 else 'v1'} under {parent}"
        else:
            why = layout.why.get(name) or layout.why.get("v2") or "no cgroup controller for it"
            status[name] = f"MISSING ({why})"
    return status


def _kill_members(folder: Path) -> None:
    kill = folder / "cgroup.kill"
    if kill.exists() and _write(kill, "1"):
        return
    for _ in range(50):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


class SandboxCgroup:
    """The cgroups of one sandbox, created with its limits; :meth:`close` removes them."""

    def __init__(self, limits: SandboxLimits) -> None:
        layout = _layout()
        name = f"sb-{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:6]}"
        self.folders: dict[str, Path] = {}
        self.v2: dict[str, bool] = {}
        self._cpu_fd = -1
        by_parent: dict[Path, Path] = {}
        for total, (parent, v2) in layout.parents.items():
            folder = by_parent.get(parent) or parent / name
            if folder not in by_parent.values() and not _mkdir(folder):
                continue
            by_parent[parent] = folder
            self.folders[total] = folder
            self.v2[total] = v2
        self._set_limits(limits)

    def _set_limits(self, limits: SandboxLimits) -> None:
        for total, folder in list(self.folders.items()):
            v2 = self.v2[total]
            ok = True
            if total == "memory":
                mem = str(limits.memory_bytes)
                if v2:
                    ok = _write(folder / "memory.max", mem)
                    _write(folder / "memory.swap.max", "0")
                else:
                    ok = _write(folder / "memory.limit_in_bytes", mem)
                    _write(folder / "memory.memsw.limit_in_bytes", mem)
            elif total == "processes":
                ok = _write(folder / "pids.max", str(limits.max_processes))
            elif total == "cpu rate":
                quota = max(1000, round(limits.cpus * _PERIOD_US))
                if v2:
                    ok = _write(folder / "cpu.max", f"{quota} {_PERIOD_US}")
                else:
                    ok = _write(folder / "cpu.cfs_period_us", str(_PERIOD_US)) and _write(
                        folder / "cpu.cfs_quota_us", str(quota)
                    )
            if not ok:
                del self.folders[total]

    @property
    def missing(self) -> list[str]:
        """Totals this sandbox runs without."""
        return [name for name in TOTALS if name not in self.folders]

    def join_fds(self) -> list[int]:
        """Descriptors of each ``cgroup.procs`` for the launcher to write ``0`` into (joining
        them itself, before it starts anything); the caller closes them."""
        fds = []
        for folder in sorted(set(self.folders.values()) | self._v2_folder()):
            with contextlib.suppress(OSError):
                fds.append(os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        return fds

    def _v2_folder(self) -> set[Path]:
        return {f for t, f in self.folders.items() if self.v2[t]}

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system) of every process that ran in the sandbox so far."""
        folder = self.folders.get("cpu time")
        if folder is None:
            return None
        v2 = self.v2["cpu time"]
        try:
            # Read twice per call of a session: one descriptor, re-read from the start.
            if self._cpu_fd < 0:
                name = "cpu.stat" if v2 else "cpuacct.usage"
                self._cpu_fd = os.open(folder / name, os.O_RDONLY | os.O_CLOEXEC)
            data = os.pread(self._cpu_fd, 4096, 0)
            if not v2:
                return int(data) / 1e9
            return int(data.split(b"usage_usec ", 1)[1].split(b"\n", 1)[0]) / 1e6
        except (OSError, ValueError, IndexError):
            return None

    def oom_kills(self) -> int:
        """Processes the kernel killed for passing the memory total."""
        folder = self.folders.get("memory")
        if folder is None:
            return 0
        name = "memory.events" if self.v2["memory"] else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in (folder / name).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return 0

    def kill(self) -> None:
        """Kills every process in the sandbox's cgroups."""
        for folder in set(self.folders.values()):
            _kill_members(folder)

    def close(self) -> None:
        """Kills what is left and removes the cgroups."""
        if self._cpu_fd >= 0:
            os.close(self._cpu_fd)
            self._cpu_fd = -1
        folders = set(self.folders.values())
        deadline = time.monotonic() + 1.0
        while folders and time.monotonic() < deadline:
            for folder in list(folders):
                _kill_members(folder)
                try:
                    folder.rmdir()
                    folders.discard(folder)
                except FileNotFoundError:
                    folders.discard(folder)
                except OSError:
                    pass  # processes still exiting
            if folders:
                time.sleep(0.01)
        self.folders = {}
