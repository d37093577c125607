"""What the kernel offers sandboxed code: user namespaces, dangerous syscalls, devices, and the
workspace's ``tmp`` mount point."""

from __future__ import annotations

import os
import uuid

from attacks.registry import ALL, STRONG, Ctx, Verdict, attack
from omnilab.sandbox import run

_SYSCALLS = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    r = libc.syscall(*[ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
"""


@attack("create a user namespace", ALL)
def userns(ctx: Ctx) -> Verdict:
    out, _ = ctx.run(_SYSCALLS + "print(call(272, 0x10000000))")  # unshare(CLONE_NEWUSER)
    return out.strip() in ("EPERM", "EINVAL", "ENOSPC"), f"unshare(CLONE_NEWUSER): {out.strip()}"


@attack("ptrace, bpf, io_uring, keyctl, mount", ALL)
def syscalls(ctx: Ctx) -> Verdict:
    code = (
        _SYSCALLS
        + """
pid = os.fork()
if pid == 0:
    import time; time.sleep(5); os._exit(0)
print("ptrace", call(101, 16, pid, 0, 0))           # PTRACE_ATTACH own child
print("bpf", call(321, 0, 0, 0))                   # BPF_MAP_CREATE
print("io_uring", call(425, 1, 0))                 # io_uring_setup
print("keyctl", call(250, 0, -3, 0))               # KEYCTL_GET_KEYRING_ID
print("mount", call(165, 0, 0, 0, 0, 0))
os.kill(pid, 9)
"""
    )
    import platform

    if platform.machine() != "x86_64":
        return True, "n/a (syscall numbers are x86_64)"
    out, _ = ctx.run(code)
    allowed = [line for line in out.splitlines() if line.endswith(" ok")]
    return not allowed and out.count("EPERM") == 5, out.replace("\n", ", ")


@attack("open /dev/fuse and /dev/net/tun", STRONG)
def devices(ctx: Ctx) -> Verdict:
    code = """
        import os
        for dev in ("/dev/fuse", "/dev/net/tun", "/dev/kmsg"):
            try:
                os.close(os.open(dev, os.O_RDWR)); print("opened", dev)
            except OSError as e:
                print("refused", dev, e.errno)
    """
    out, _ = ctx.run(code)
    return "opened" not in out, out.replace("\n", ", ")


@attack("plant a dangling tmp link", ALL)
def tmp_link(ctx: Ctx) -> Verdict:
    ws = ctx.ws()
    victim = ctx.root / f"victim-{uuid.uuid4().hex[:6]}"
    victim.mkdir()
    ctx.run(f"import os, shutil; shutil.rmtree('tmp'); os.symlink({str(victim)!r}, 'tmp')", ws=ws)
    first = run(["true"], workspace=ws, isolation=ctx.level)
    ctx.run("import os, shutil; shutil.rmtree('tmp'); os.symlink('/nonexistent', 'tmp')", ws=ws)
    second = run(["true"], workspace=ws, isolation=ctx.level)
    real = (ws / "tmp").is_dir() and not (ws / "tmp").is_symlink()
    untouched = victim.stat().st_uid == os.geteuid()
    ok = first.ok and second.ok and real and untouched
    return (
        ok,
        f"later runs ok: {first.ok and second.ok}, tmp real: {real}, victim kept: {untouched}",
    )
