"""The launcher's mount half: at the ``namespaces`` level, builds the sandbox's file system from
the plan the harness made (:func:`._plan.mount_plan`): a fresh tmpfs root holding only what the
plan names, /dev and /proc of its own, the old root gone (:func:`_setup_mounts`).

Part of the launcher program (:mod:`._launcher`): the harness runs that file's text, then this
one's, then ``main()``, with ``python -I -S -c`` (:func:`._launch.launcher_source`). So this file
uses the standard library only, never imports omnilab, and has no ``from __future__`` import (its
text is not the start of the program). The harness imports it for :func:`_mount` too.
"""

import contextlib
import ctypes
import os
import platform
from pathlib import Path
from typing import Any

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


class _MountAttr(ctypes.Structure):
    _fields_ = (
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
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
