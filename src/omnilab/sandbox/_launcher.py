"""The sandbox's first process: sets up mounts, limits and credentials, then runs the program.

Runs in the child, never in the harness: the harness passes this file's text to
``python -I -S -c`` with a JSON config as the only argument, so it may use the standard library
only and must not import omnilab. It

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
import platform  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_SYS_MOUNT_SETATTR = 442  # same number on every architecture listed below
_SETATTR_ARCHES = {"x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x", "i686", "armv7l"}
_MNT_DETACH = 2
# pivot_root has no C library wrapper; its number per architecture.
_SYS_PIVOT_ROOT = {
    "x86_64": 155,
    "aarch64": 41,
    "arm64": 41,
    "riscv64": 41,
    "ppc64le": 203,
    "s390x": 217,
    "i686": 217,
    "armv7l": 218,
}
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_MS_NOEXEC_NOSUID = 0x2 | 0x8
# What /dev holds in the sandbox: no fuse, tun, disks or kvm of the host.
_DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
    "ptmx": "pts/ptmx",
}
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


class _MountAttr(ctypes.Structure):
    _fields_ = (
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    )


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


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    libc = _libc()
    libc.mount.argtypes = (
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    )
    encode = os.fsencode
    result = libc.mount(
        encode(source) if source else None,
        encode(target),
        encode(fstype) if fstype else None,
        flags,
        data.encode() if data else None,
    )
    _check(result, f"mount {target}")


def _set_readonly(path: str, readonly: bool) -> bool:
    """Sets or clears read-only on every mount at and under ``path``; False if unsupported."""
    if platform.machine() not in _SETATTR_ARCHES:
        return False
    attr = _MountAttr(
        _MOUNT_ATTR_RDONLY if readonly else 0, 0 if readonly else _MOUNT_ATTR_RDONLY, 0, 0
    )
    result = _libc().syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.c_uint(_AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    return bool(result == 0)


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _pivot_root(new_root: str) -> None:
    """Makes ``new_root`` the root of this mount namespace and drops the old one entirely."""
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(f"pivot_root: unknown system call number on {platform.machine()}")
    os.chdir(new_root)
    # pivot_root(".", ".") stacks the old root on top of the new one; unmounting it (lazily,
    # with every mount under it) leaves only the new root.
    libc = _libc()
    dot = ctypes.c_char_p(b".")
    _check(libc.syscall(ctypes.c_long(number), dot, dot), "pivot_root")
    _check(libc.umount2(dot, _MNT_DETACH), "detach the old root")
    os.chdir("/")


def _setup_mounts(plan: dict[str, Any]) -> bool:
    """Builds the sandbox's view of the file system; returns whether the root is read-only.

    The view is an allow-list: a fresh tmpfs becomes the root, and only what the plan names is
    mounted into it (system folders and the Python install read-only, the workspace writable,
    private scratch folders, a minimal /dev, an own /proc). Nothing else of the machine exists
    in the sandbox, so nothing else can be read, listed or reached through a link.
    """
    os.umask(0o022)
    # Nothing done here may propagate back to the harness's mount namespace.
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    binds: list[tuple[str, bool]] = [(p, bool(rw)) for p, rw in plan["binds"]]
    # Opened before the new root hides them; bound from the descriptor afterwards.
    fds = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path, _ in binds}
    devices = {n: os.open(f"/dev/{n}", os.O_PATH | os.O_CLOEXEC) for n in plan.get("dev", [])}
    hidden: list[str] = list(plan.get("hide", []))
    null = os.open("/dev/null", os.O_PATH | os.O_CLOEXEC) if hidden else -1
    # The new root: a tmpfs over an existing folder of this (private) mount namespace.
    root = plan["base"]
    _mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=755,size={plan['root_bytes']}")
    for path, target in plan.get("links", []):
        Path(root + path).symlink_to(target)
    # (depth, order, path, what): a mask comes before a bind of the same depth, so a needed
    # folder that is also a private one stays shown.
    items: list[tuple[int, int, str, Any]] = [(_depth(p), 1, p, rw) for p, rw in binds]
    items += [(_depth(p), 0, p, (int(size), 0o1777)) for p, size in plan["scratch"]]
    items += [(_depth(p), 0, p, (1024 * 1024, 0o755)) for p in plan["masks"]]
    # A hidden file reads as /dev/null, bound after the folder that shows it.
    items += [(_depth(p), 2, p, None) for p in hidden]
    if devices:
        items.append((1, 0, "/dev", (1024 * 1024, 0o755)))
    for _, order, path, what in sorted(items, key=lambda i: i[:3]):
        target = root + path
        if order == 2:
            if Path(target).is_file():
                _mount(f"/proc/self/fd/{null}", target, None, _MS_BIND)
            continue
        if order == 1:
            source = f"/proc/self/fd/{fds[path]}"
            if Path(source).is_dir():
                Path(target).mkdir(parents=True, exist_ok=True)
            elif not Path(target).exists():
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                Path(target).touch()
            _mount(source, target, None, _MS_BIND | _MS_REC)
            continue
        size, mode = what
        Path(target).mkdir(parents=True, exist_ok=True)
        flags = _MS_NOSUID | (0 if path == "/dev" else _MS_NODEV)
        _mount("tmpfs", target, "tmpfs", flags, f"mode={mode:o},size={size}")
        if path == "/dev":
            _populate_dev(target, devices)
    for fd in [*fds.values(), *([null] if hidden else [])]:
        os.close(fd)
    if plan.get("proc"):
        # Mounted before the old root goes: a user namespace may mount a proc only while a
        # full one is visible.
        Path(root, "proc").mkdir(exist_ok=True)
        _mount("proc", root + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    _pivot_root(root)
    readonly = _set_readonly("/", True)
    if readonly:
        # Each mount as the plan says, shallow first, each setting covering what lies under
        # it until a deeper one says otherwise (the Python install may sit in /tmp's place).
        wanted = [(p, rw) for p, rw in binds] + [(p, True) for p, _ in plan["scratch"]]
        wanted += [(p, False) for p in plan["masks"]]
        if devices and Path("/dev/pts/ptmx").exists():
            wanted.append(("/dev/pts", True))
        for path, rw in sorted(wanted, key=lambda w: _depth(w[0])):
            if not _set_readonly(path, not rw) and rw:
                raise OSError(f"cannot make {path} writable again")
    return readonly


def _populate_dev(dev: str, devices: dict[str, int]) -> None:
    """Fills the fresh ``dev`` (the future /dev): the harmless nodes bound from the host's,
    links, a private devpts (terminals) and the folder for the /dev/shm tmpfs."""
    for name, fd in devices.items():
        Path(dev, name).touch(mode=0o666)
        _mount(f"/proc/self/fd/{fd}", f"{dev}/{name}", None, _MS_BIND)
        os.close(fd)
    for name, target in _DEV_LINKS.items():
        Path(dev, name).symlink_to(target)
    Path(dev, "pts").mkdir()
    Path(dev, "shm").mkdir(exist_ok=True)
    with contextlib.suppress(OSError):  # terminals are optional: programs run without one
        _mount("devpts", f"{dev}/pts", "devpts", _MS_NOEXEC_NOSUID, "newinstance,ptmxmode=0666")


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


if __name__ == "__main__":
    main()
