"""The sandbox's first process: sets up mounts, limits and credentials, then runs the program.

Runs in the child, never in the harness: the harness passes this file's text, then its mount
half's (:mod:`._launcher_fs`), then ``main()`` to ``python -I -S -c`` with a JSON config and
the cgroup descriptors as arguments (:func:`._launch.launcher_source`), so it may use the
standard library only and must not import omnilab. It

0. joins the sandbox's cgroups (descriptors the harness opened), so that everything it starts
   counts against the sandbox's totals;
1. (``namespaces`` level, as root of fresh mount/pid namespaces) builds a new root from
   nothing: the system folders and the Python install (read-only), the workspace (writable),
   private temporary folders, a minimal /dev and a /proc of its own, pivots into it and makes
   every mount but the writable ones read-only;
2. forks the program in a new session with its rlimits, under the sandbox uid (harness is root)
   or with every capability dropped (user namespace), with no_new_privs and the seccomp filter
   the harness built (:mod:`._seccomp`), in the workspace;
3. stays as the reaper (child subreaper, or init of the pid namespace), reports the program's
   status on the status pipe and kills whatever the program left behind before exiting.

A lifeline pipe, whose other end only the harness holds, ends the sandbox when the harness dies.
Status messages are JSON lines: ``ready`` (pids and pid namespace), ``error`` (could not start),
``exit`` (code, signal, cpu seconds).
"""

from __future__ import annotations

import os
import sys
import threading


def _join_cgroups(fds: list[int], failed: list[str]) -> None:
    """Moves this process (all its threads) into the sandbox's cgroups."""
    try:
        for fd in fds:
            os.write(fd, b"0")  # 0: this process; everything it starts follows
            os.close(fd)
    except OSError as exc:
        failed.append(f"cgroup: {exc}")


# Joining a cgroup waits for an RCU grace period (milliseconds, more on a loaded machine): it
# starts before the other imports, overlaps them and the mount setup, and ends before anything
# is forked (``main``). The descriptors come as ``argv[2]``, readable without ``json``.
_CGROUP_FAILED: list[str] = []
_JOINER: threading.Thread | None = None
if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[2]:
    _JOINER = threading.Thread(
        target=_join_cgroups, args=([int(fd) for fd in sys.argv[2].split(",")], _CGROUP_FAILED)
    )
    _JOINER.start()

import contextlib  # noqa: E402 - after the cgroup join started, on purpose
import ctypes  # noqa: E402
import fcntl  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

if TYPE_CHECKING:
    # For the type checker only: in the program these are defined by the mount half, whose text
    # follows this one's (a launcher that imported omnilab could not run in the sandbox).
    from omnilab.sandbox._launcher_fs import _check, _libc, _setup_mounts  # noqa: TC004

_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
# NOROOT + NO_CAP_AMBIENT_RAISE, both locked: uid 0 of a user namespace regains nothing on exec.
_SECUREBITS = 0x01 | 0x02 | 0x40 | 0x80
_RLIMITS = {
    "CPU": resource.RLIMIT_CPU,
    "AS": resource.RLIMIT_AS,
    "FSIZE": resource.RLIMIT_FSIZE,
    "NPROC": resource.RLIMIT_NPROC,
    "CORE": resource.RLIMIT_CORE,
    "NOFILE": resource.RLIMIT_NOFILE,
}


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def _load_seccomp(program: bytes) -> None:
    """Installs the harness's BPF filter on this process and what it starts (needs
    no_new_privs first)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    _check(
        _libc().prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp"
    )


def _drop_capabilities() -> None:
    """Leaves uid 0 of a user namespace with no capability now or after exec."""
    libc = _libc()
    _check(libc.prctl(_PR_SET_SECUREBITS, _SECUREBITS, 0, 0, 0), "securebits")
    for cap in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")


def _plumb_fds(fd_map: list[list[int]], status_fd: int) -> int:
    """Puts each ``source`` descriptor at ``target``, closes every other one above 2 and returns
    the status pipe's new descriptor (close-on-exec: it reports a failed exec, then goes)."""
    # Park everything above the targets first, so one dup2 cannot clobber a later source.
    high = 1000
    status = fcntl.fcntl(status_fd, fcntl.F_DUPFD_CLOEXEC, high)
    parked = [(target, fcntl.fcntl(source, fcntl.F_DUPFD, high)) for target, source in fd_map]
    os.closerange(3, high)
    for target, source in parked:
        os.dup2(source, target)
        os.close(source)
    return status


def _report(status_fd: int, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        os.write(status_fd, (json.dumps(message) + "\n").encode())


def _become_program(cfg: dict[str, Any]) -> None:
    """In the forked child: limits, credentials, descriptors, then exec. Never returns."""
    status_fd = int(cfg["status_fd"])
    launcher = os.getppid()
    try:
        os.setsid()
        status_fd = _plumb_fds(cfg["fd_map"], status_fd)
        for name, (soft, hard) in cfg["rlimits"].items():
            inf = resource.RLIM_INFINITY
            resource.setrlimit(
                _RLIMITS[name], (inf if soft < 0 else soft, inf if hard < 0 else hard)
            )
        os.chdir(cfg["cwd"])
        if cfg.get("uid") is not None:
            os.setgroups([])
            os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
            os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
        if cfg.get("drop_caps"):
            _drop_capabilities()
        libc = _libc()
        # No setuid binary or file capability can give back what was dropped.
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        if cfg.get("seccomp"):
            _load_seccomp(bytes.fromhex(cfg["seccomp"]))
        # Set after the uid change, which clears it; the launcher dying takes the program along.
        _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        if os.getppid() != launcher:
            os._exit(137)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        argv = cfg["argv"]
        os.execvpe(argv[0], argv, dict(os.environ))  # noqa: S606 - argv is a list, no shell
    except BaseException as exc:
        _report(status_fd, {"event": "error", "message": f"cannot start {cfg['argv'][0]}: {exc}"})
        os._exit(127)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _kill_leftovers() -> None:
    """Kills what the program left running (daemons, setsid'd grandchildren) and reaps it."""
    me = os.getpid()
    frozen: set[int] = set()
    for _ in range(100):
        new = [p for p in _descendants(me) if p not in frozen]
        if not new:
            break
        for pid in new:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        frozen.update(new)
    for pid in frozen:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _watch_harness(lifeline: int, child: int) -> None:
    """Ends the sandbox when the harness goes away (crash, kill -9, exit without cleanup): the
    harness holds the other end of this pipe and never writes, so end of file means it died."""
    with contextlib.suppress(OSError):
        while os.read(lifeline, 1):
            pass
    with contextlib.suppress(OSError):
        os.kill(child, signal.SIGKILL)
    _kill_leftovers()
    os._exit(137)


def main() -> None:
    """Entry point: ``python -I -S -c <this file> <json config> <cgroup descriptors>``."""
    cfg = json.loads(sys.argv[1])
    status_fd = int(cfg["status_fd"])
    failed = _CGROUP_FAILED
    readonly = False
    if cfg.get("mounts"):
        try:
            readonly = _setup_mounts(cfg["mounts"])
        except OSError as exc:
            failed.append(str(exc))
    if _JOINER is not None:
        _JOINER.join()
    if failed:
        _report(status_fd, {"event": "error", "message": f"sandbox setup failed: {failed[0]}"})
        os._exit(125)
    # Orphans of the program come back to us (outside a pid namespace too), so none escapes.
    _libc().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    child = os.fork()
    if child == 0:
        _become_program(cfg)
    lifeline = cfg.get("lifeline_fd")
    if lifeline is not None:
        threading.Thread(target=_watch_harness, args=(int(lifeline), child), daemon=True).start()
    pidns = None
    with contextlib.suppress(OSError):
        pidns = str(Path("/proc/self/ns/pid").readlink())
    _report(
        status_fd,
        {"event": "ready", "pid": os.getpid(), "child": child, "pidns": pidns, "ro": readonly},
    )
    code: int | None = None
    sig: int | None = None
    cpu = 0.0
    while True:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == child:
            returned = os.waitstatus_to_exitcode(status)
            code, sig = (returned, None) if returned >= 0 else (None, -returned)
            cpu = usage.ru_utime + usage.ru_stime
            break
    _kill_leftovers()
    _report(status_fd, {"event": "exit", "code": code, "signal": sig, "cpu": cpu})
    os._exit(code if code is not None else 128 + (sig or 0))


# The mount half (:mod:`._launcher_fs`) follows this text in the program the harness runs,
# then the call of ``main()`` (:func:`._launch.launcher_source`).
