"""Finding and killing a sandbox's processes through ``/proc`` (no psutil needed)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "descendants",
    "host_pid",
    "kill_processes",
    "kill_tree",
    "pids_in_namespace",
    "pids_of_uid",
    "tree_cpu_seconds",
]

_PROC = Path("/proc")


def _pids() -> list[int]:
    return [int(p.name) for p in _PROC.iterdir() if p.name.isdigit()]


def _ppid(pid: int) -> int | None:
    try:
        stat = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name may contain spaces and parentheses; fields resume after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        ppid = _ppid(pid)
        if ppid is not None:
            children.setdefault(ppid, []).append(pid)
    return children


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (not ``root`` itself), parents before children."""
    children = _children_map()
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def host_pid(root: int, inner_pid: int) -> int | None:
    """The pid, as the harness sees it, of the descendant of ``root`` that its own pid namespace
    calls ``inner_pid`` (the launcher reports pids from inside the sandbox)."""
    for pid in [root, *descendants(root)]:
        try:
            status = (_PROC / str(pid) / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("NSpid:") and int(line.split()[-1]) == inner_pid:
                return pid
    return None


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and its live descendants, each with what its
    reaped children left it (the fallback when no cgroup counts the sandbox's CPU)."""
    ticks = 0
    for pid in [root, *descendants(root)]:
        try:
            stat = (_PROC / str(pid) / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def pids_in_namespace(pidns: str) -> list[int]:
    """Processes in the pid namespace named like ``pid:[4026532]`` (``/proc/PID/ns/pid``)."""
    found = []
    for pid in _pids():
        with contextlib.suppress(OSError):
            if str((_PROC / str(pid) / "ns" / "pid").readlink()) == pidns:
                found.append(pid)
    return found


def pids_of_uid(uid: int) -> list[int]:
    """Processes running as ``uid`` (the owner of ``/proc/PID`` is the process's effective uid,
    one ``stat`` per process instead of reading its status)."""
    found = []
    for pid in _pids():
        with contextlib.suppress(OSError):
            if (_PROC / str(pid)).stat().st_uid == uid:
                found.append(pid)
    return found


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        # Gone already, or (process level, non-root harness) not ours: nothing more to do.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_processes(pids: Iterable[int]) -> None:
    """SIGKILLs the given processes."""
    _signal(pids, signal.SIGKILL)


def kill_tree(root: int, *, include_root: bool = True, keep: Iterable[int] = ()) -> int:
    """Kills ``root``'s process tree, however fast it forks; returns how many were killed.

    Freezes first (SIGSTOP) until a scan finds nothing new, then kills: a stopped process cannot
    fork, so nothing is born between the last scan and the kill, and no child is orphaned to init
    by its parent dying first. ``keep`` (e.g. a shell whose command is being interrupted) and its
    ancestors are spared.
    """
    spared = set(keep)
    frozen: set[int] = set()
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        tree = descendants(root)
        ancestors_of_kept = _ancestors(spared, root)
        new = [
            p for p in tree if p not in frozen and p not in spared and p not in ancestors_of_kept
        ]
        if not new:
            break
        _signal(new, signal.SIGSTOP)
        frozen.update(new)
    if include_root:
        frozen.add(root)
    _signal(frozen, signal.SIGKILL)
    return len(frozen)


def _ancestors(pids: set[int], root: int) -> set[int]:
    found: set[int] = set()
    for pid in pids:
        cur: int | None = pid
        while cur is not None and cur not in (root, 0, 1) and cur not in found:
            cur = _ppid(cur)
            if cur is not None and cur != root:
                found.add(cur)
    return found
