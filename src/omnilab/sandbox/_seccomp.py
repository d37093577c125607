"""The seccomp filter sandboxed programs run under: a small BPF program, built here and loaded
by the launcher with ``prctl`` just before it runs the program.

No library: the launcher may use the standard library only (it runs with ``-I -S`` inside the
sandbox), and the maintained bindings (``pyseccomp``) need the C library ``libseccomp`` installed
on the machine. The filter is a deny-list of what a sandbox never needs and what attacks use to
get out: new namespaces (``unshare``, ``setns``, ``clone`` with namespace flags; ``clone3`` answers
ENOSYS so the C library falls back to ``clone``), ``ptrace`` and cross-process memory access,
``bpf``, ``io_uring``, the kernel keyring, mounting, kexec and modules, ``perf_event_open``,
``userfaultfd``, file handles, swap, reboot, clock setting, and terminal input injection
(``TIOCSTI``). Denied calls fail with EPERM; a call from another architecture's table kills.
"""

from __future__ import annotations

import platform
import struct

__all__ = ["DENIED", "filter_program"]

# Syscall numbers: x86_64 (arch/x86/entry/syscalls/syscall_64.tbl) and the generic table that
# aarch64 uses (include/uapi/asm-generic/unistd.h).
_X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "bpf": 321,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 250,
    "add_key": 248, "request_key": 249, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
    "finit_module": 313, "delete_module": 176, "unshare": 272, "setns": 308,
    "perf_event_open": 298, "userfaultfd": 323, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "move_mount": 429, "open_tree": 428, "mount_setattr": 442, "swapon": 167, "swapoff": 168,
    "reboot": 169, "syslog": 103, "acct": 163, "settimeofday": 164, "clock_settime": 227,
    "clock_adjtime": 305, "adjtimex": 159, "quotactl": 179, "lookup_dcookie": 212,
    "vhangup": 153, "iopl": 172, "ioperm": 173,
    "clone": 56, "clone3": 435, "ioctl": 16,
}  # fmt: skip
_AARCH64 = {
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "bpf": 280,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 219,
    "add_key": 217, "request_key": 218, "mount": 40, "umount2": 39, "pivot_root": 41,
    "chroot": 51, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105,
    "finit_module": 273, "delete_module": 106, "unshare": 97, "setns": 268,
    "perf_event_open": 241, "userfaultfd": 282, "open_by_handle_at": 265,
    "name_to_handle_at": 264, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "move_mount": 429, "open_tree": 428, "mount_setattr": 442, "swapon": 224, "swapoff": 225,
    "reboot": 142, "syslog": 116, "acct": 89, "settimeofday": 170, "clock_settime": 112,
    "clock_adjtime": 266, "adjtimex": 171, "quotactl": 60, "lookup_dcookie": 18,
    "vhangup": 58,
    "clone": 220, "clone3": 435, "ioctl": 29,
}  # fmt: skip
_ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}
_ARCHES["arm64"] = _ARCHES["aarch64"]
_SPECIAL = ("clone", "clone3", "ioctl")
DENIED = [name for name in _X86_64 if name not in _SPECIAL]
"""Syscalls refused outright (EPERM)."""

_CLONE_NEW = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
_TTY_INJECT = (0x5412, 0x541C)  # TIOCSTI, TIOCLINUX
_X32_BIT = 0x40000000
_EPERM, _ENOSYS = 1, 38

_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (low words)


def filter_program(machine: str | None = None) -> bytes | None:
    """The filter as ``struct sock_filter`` entries, or None for an architecture without a
    table here (the isolation report then says seccomp is missing)."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, table = arch
    # (code, jump-if-true, jump-if-false, k); jumps name a label or are relative offsets.
    code: list[tuple[int, int | str, int | str, int]] = [
        (_LD_ABS, 0, 0, _ARCH),
        (_JEQ, 1, 0, audit_arch),
        (_RET, 0, 0, _KILL),
        (_LD_ABS, 0, 0, _NR),
    ]
    if table is _X86_64:
        code.append((_JGE, "eperm", 0, _X32_BIT))  # x32 calls: a second table to slip through
    code.append((_JEQ, "enosys", 0, table["clone3"]))
    code += [(_JEQ, "eperm", 0, table[name]) for name in DENIED]
    code.append((_JEQ, "clone", 0, table["clone"]))
    code.append((_JEQ, "ioctl", 0, table["ioctl"]))
    code.append((_RET, 0, 0, _ALLOW))
    labels = {"clone": len(code)}
    code += [(_LD_ABS, 0, 0, _ARG0), (_JSET, "eperm", 0, _CLONE_NEW), (_RET, 0, 0, _ALLOW)]
    labels["ioctl"] = len(code)
    code.append((_LD_ABS, 0, 0, _ARG1))
    code += [(_JEQ, "eperm", 0, cmd) for cmd in _TTY_INJECT]
    code.append((_RET, 0, 0, _ALLOW))
    labels["eperm"] = len(code)
    code.append((_RET, 0, 0, _ERRNO | _EPERM))
    labels["enosys"] = len(code)
    code.append((_RET, 0, 0, _ERRNO | _ENOSYS))

    def offset(at: int, jump: int | str) -> int:
        return jump if isinstance(jump, int) else labels[jump] - at - 1

    return b"".join(
        struct.pack("=HBBI", op, offset(i, jt), offset(i, jf), k)
        for i, (op, jt, jf, k) in enumerate(code)
    )
