"""Attacks on the sandbox, made from inside as model-written code would make them, at every
isolation level this machine offers; prints attack x level -> contained / escaped.

Usage::

    python bench/sandbox_attacks.py [--levels namespaces,process] [--markdown]
    python bench/sandbox_attacks.py --overhead 40     # start-up and per-call times

Each attack returns whether the sandbox contained it and what happened. ``PROMISED`` says at
which levels containment is promised (``process+uid``: the ``process`` level with a root
harness, which drops to a uid of its own); ``tests/sandbox/test_escapes.py`` runs every attack
and fails on an escape where one is promised, and on a "contained" where the level documents a
gap. Everything is small-scale (a 256 MiB memory total, a 64 MiB workspace) so a shared machine
survives it. Run as root for the full picture (own uids, cgroups, the workspace tmpfs).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from omnilab.config import SandboxLimits
from omnilab.sandbox import IsolationLevel, PythonSession, SandboxError, run
from omnilab.sandbox._isolation import resolve_level
from omnilab.sandbox._plan import closed_ancestor

Verdict = tuple[bool, str]
STRONG = frozenset({"bwrap", "namespaces"})
ALL = frozenset({"bwrap", "namespaces", "process+uid", "process"})
OWN_UID = frozenset({"bwrap", "namespaces", "process+uid"})

LIMITS = SandboxLimits(
    cpu_seconds=2,
    memory_bytes=256 * 1024**2,
    file_size_bytes=16 * 1024**2,
    max_processes=48,
    wall_seconds=15,
    output_bytes=4000,
    workspace_bytes=64 * 1024**2,
    workspace_inodes=2000,
)


@dataclass
class Ctx:
    """Where and how one attack runs."""

    level: IsolationLevel
    root: Path
    """A scratch folder the sandbox's own uid can pass through (mode 0711)."""
    python: str
    """An interpreter that uid can run."""
    limits: SandboxLimits = field(default_factory=lambda: LIMITS)

    @property
    def mode(self) -> str:
        """The level as ``PROMISED`` names it."""
        if self.level is IsolationLevel.PROCESS and os.geteuid() == 0:
            return "process+uid"
        return self.level.value

    def ws(self) -> Path:
        path = self.root / f"ws-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        return path

    def run(self, code: str, **kw: object) -> tuple[str, str]:
        limits = kw.pop("limits", self.limits)
        ws = kw.pop("ws", None) or self.ws()
        r = run(
            [self.python, "-c", textwrap.dedent(code)],
            workspace=ws,  # type: ignore[arg-type]
            limits=limits,  # type: ignore[arg-type]
            isolation=self.level,
            **kw,  # type: ignore[arg-type]
        )
        return r.stdout, f"exit {r.exit_code}, killed {r.killed}"

    def session(self, ws: Path | None = None, **kw: object) -> PythonSession:
        limits = kw.pop("limits", self.limits)
        return PythonSession(
            ws or self.ws(),
            limits=limits,  # type: ignore[arg-type]
            isolation=self.level,
            python=self.python,
        )


ATTACKS: dict[str, Callable[[Ctx], Verdict]] = {}
PROMISED: dict[str, frozenset[str]] = {}


def attack(name: str, promised: frozenset[str]) -> Callable[..., Callable[[Ctx], Verdict]]:
    def register(fn: Callable[[Ctx], Verdict]) -> Callable[[Ctx], Verdict]:
        ATTACKS[name] = fn
        PROMISED[name] = promised
        return fn

    return register


def _token() -> str:
    return f"omnilabattack{uuid.uuid4().hex}"


def _alive_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def _gone(token: str, wait: float = 3.0) -> bool:
    deadline = time.monotonic() + wait
    while _alive_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive_with(token)


def _split(token: str) -> str:
    """The token as Python source that does not contain it (only the spawned process's
    command line does)."""
    return f"{token[:6]!r} + {token[6:]!r}"


# -- the attacks of tests/sandbox/test_attacks.py ---------------------------------------------


@attack("cpu loop", ALL)
def cpu_loop(ctx: Ctx) -> Verdict:
    _, how = ctx.run("while True: pass")
    return "cpu limit" in how, how


@attack("sleep forever", ALL)
def sleep_forever(ctx: Ctx) -> Verdict:
    limits = ctx.limits.model_copy(update={"wall_seconds": 1.0})
    t0 = time.monotonic()
    _, how = ctx.run("import time; time.sleep(600)", limits=limits)
    return "wall-clock" in how and time.monotonic() - t0 < 5, how


@attack("allocate 10 GB", ALL)
def allocate(ctx: Ctx) -> Verdict:
    out, how = ctx.run("b = bytearray(10 * 1024**3); print('allocated')")
    return "allocated" not in out, how


@attack("fork bomb", OWN_UID)
def fork_bomb(ctx: Ctx) -> Verdict:
    token = _token()
    code = f"""
        import os, sys, time
        n = 0
        for _ in range(2000):
            try:
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(30)", {_split(token)}])
                n += 1
            except OSError:
                break
        print("forked", n, flush=True)
    """
    limits = ctx.limits.model_copy(update={"wall_seconds": 4.0})
    out, _ = ctx.run(code, limits=limits)
    forked = int(out.split()[1]) if out.startswith("forked") else -1
    contained = 0 <= forked < ctx.limits.max_processes and _gone(token)
    return contained, f"forked {forked} (limit {ctx.limits.max_processes})"


@attack("setsid daemon outlives the run", ALL)
def daemon(ctx: Ctx) -> Verdict:
    token = _token()
    code = f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", {_split(token)}])
            os._exit(0)
        time.sleep(0.5)
    """
    ctx.run(code)
    alive = _alive_with(token)
    return _gone(token, 1.0), f"{len(alive)} daemon(s) left"


@attack("write outside the workspace", STRONG)
def write_outside(ctx: Ctx) -> Verdict:
    ws = ctx.ws()
    name = f"escaped-{uuid.uuid4().hex}"
    targets = [Path("/tmp") / name, ws.parent / name, Path("/var/tmp") / name]
    code = f"""
        for path in {[str(t) for t in targets]!r}:
            try:
                open(path, "w").write("x")
            except OSError:
                pass
    """
    ctx.run(code, ws=ws)
    written = [t for t in targets if t.exists()]
    for t in written:
        t.unlink()
    return not written, f"wrote {[str(t) for t in written]}"


@attack("read root-only /etc/shadow", OWN_UID)
def shadow(ctx: Ctx) -> Verdict:
    if os.geteuid() != 0 or not Path("/etc/shadow").exists():
        return True, "n/a (needs a root harness and /etc/shadow)"
    out, how = ctx.run("print(open('/etc/shadow').read()[:5])")
    return "root" not in out, how


@attack("read the harness user's ssh key", OWN_UID)
def ssh_key(ctx: Ctx) -> Verdict:
    home = ctx.root / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("PRIVATE-KEY-SECRET")
    key.chmod(0o600)
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        out, how = ctx.run(f"print(open({str(key)!r}).read())")
    finally:
        if old is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old
    return "SECRET" not in out, how


@attack("connect to the host's loopback", STRONG)
def network(ctx: Ctx) -> Verdict:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(4)
    got: list[bytes] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = server.accept()
            with conn:
                got.append(conn.recv(10))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    code = f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"hello")
        except OSError as e:
            print("refused", e)
    """
    try:
        ctx.run(code, network=False)
        thread.join(timeout=5 if not got else 0.1)
    finally:
        server.close()
    return not any(got), f"received {got}"


@attack("print 100 MB", ALL)
def flood(ctx: Ctx) -> Verdict:
    code = "import sys\nfor _ in range(100): sys.stdout.write('x' * 1_000_000)"
    r = run([ctx.python, "-c", code], workspace=ctx.ws(), limits=ctx.limits, isolation=ctx.level)
    return len(r.stdout) < 5000 and r.stdout_bytes == 100_000_000, f"kept {len(r.stdout)} chars"


@attack("write a 64 MB file", ALL)
def big_file(ctx: Ctx) -> Verdict:
    ws = ctx.ws()
    _, how = ctx.run("open('big', 'wb').write(b'0' * 64 * 1024**2)", ws=ws)
    size = (ws / "big").stat().st_size if (ws / "big").exists() else 0
    return size <= ctx.limits.file_size_bytes, f"{size >> 20} MiB written, {how}"


@attack("harness killed with SIGKILL", ALL)
def harness_killed(ctx: Ctx) -> Verdict:
    token = _token()
    harness = f"""
        from omnilab.sandbox import run
        run([{ctx.python!r}, "-c", "import time; time.sleep(60)", {_split(token)}],
            workspace={str(ctx.ws())!r}, isolation={ctx.level.value!r})
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(harness)])
    deadline = time.monotonic() + 15
    while not _alive_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = bool(_alive_with(token))
    proc.kill()
    proc.wait()
    return started and _gone(token), f"sleeper started: {started}"


# -- the escapes of issue 11 --------------------------------------------------------------------


@attack("read omnilab.toml beside the harness", STRONG)
def config_beside(ctx: Ctx) -> Verdict:
    project = ctx.root / "project"
    project.mkdir(exist_ok=True)
    config = project / "omnilab.toml"
    config.write_text('[models]\napi_key = "sk-omnilab-SECRET"\n')
    config.chmod(0o644)
    here = Path.cwd()
    os.chdir(project)
    try:
        code = f"""
            import os
            for path in [{str(config)!r}, "/proc/{os.getpid()}/cwd/omnilab.toml"]:
                try:
                    print(open(path).read())
                except OSError as e:
                    print("refused", e)
        """
        out, how = ctx.run(code)
    finally:
        os.chdir(here)
    return "SECRET" not in out, how


def _perception(ctx: Ctx, plant: str, box: list[int]) -> tuple[Path, Path, Path | None]:
    """A workspace whose code ran ``plant``, and the crop ``read_image`` then served."""
    from omnilab.inputs import InputSet
    from omnilab.media import synth
    from omnilab.models.capabilities import Capabilities
    from omnilab.tools.perception import active_perception_tools

    media = ctx.root / f"media-{uuid.uuid4().hex[:6]}"
    media.mkdir()
    photo = synth.make_image(media / "photo.png", size=(64, 48), index=1)
    secret = synth.make_image(media / "secret.png", size=(64, 48), index=7)
    secret.chmod(0o600)
    ws = ctx.ws()
    with ctx.session(ws) as py:
        py.run(plant.replace("SECRET", str(secret)).replace("MEDIA", str(media)))
    tools = active_perception_tools(
        InputSet.from_paths([photo]), capabilities=Capabilities(image=True), workspace=ws
    )
    read_image = next(t for t in tools if t.name == "read_image")
    result = asyncio.run(read_image({"image_ids": ["image_1"], "crop_box": box}))
    served = [p.path for p in result.content if getattr(p, "path", None)]
    return ws, secret, served[0] if served else None


@attack("perception serves a planted link", ALL)
def perception_read(ctx: Ctx) -> Verdict:
    plant = """
        import os
        os.makedirs("perception", exist_ok=True)
        os.symlink("SECRET", "perception/image_1_crop_0_0_32_32.png")
    """
    _, secret, served = _perception(ctx, textwrap.dedent(plant), [0, 0, 32, 32])
    leaked = served is not None and served.exists() and served.samefile(secret)
    return not leaked, f"served {served}"


@attack("perception writes through a planted link", ALL)
def perception_write(ctx: Ctx) -> Verdict:
    outside = ctx.root / f"outside-{uuid.uuid4().hex[:6]}"
    outside.mkdir(mode=0o777)
    outside.chmod(0o777)
    plant = f"""
        import os, shutil
        shutil.rmtree("perception", ignore_errors=True)
        os.symlink({str(outside)!r}, "perception")
    """
    _perception(ctx, textwrap.dedent(plant), [0, 0, 16, 16])
    written = list(outside.iterdir())
    return not written, f"harness wrote {[p.name for p in written]} outside"


@attack("read another live workspace", OWN_UID)
def other_workspace(ctx: Ctx) -> Verdict:
    a, b = ctx.ws(), ctx.ws()
    with ctx.session(a) as pa, ctx.session(b) as pb:
        pb.run("open('secret.txt', 'w').write('WORKSPACE-B-SECRET')")
        code = f"""
            import os
            try:
                print(open({str(b / "secret.txt")!r}).read())
            except OSError as e:
                print("refused", e)
            try:
                print("LISTED", os.listdir({str(b.parent)!r}))
            except OSError as e:
                print("cannot list", e.errno)
        """
        r = pa.run(textwrap.dedent(code))
    listed = any(b.name in line for line in r.stdout.splitlines() if line.startswith("LISTED"))
    return "SECRET" not in r.stdout and not listed, r.stdout.strip()[:120]


@attack("switch off the per-call CPU timer", ALL)
def timer_off(ctx: Ctx) -> Verdict:
    code = """
        import signal
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, signal.SIG_IGN)
        while True:
            pass
    """
    limits = ctx.limits.model_copy(update={"cpu_seconds": 1.0, "wall_seconds": 20.0})
    t0 = time.monotonic()
    with ctx.session(limits=limits) as py:
        r = py.run(textwrap.dedent(code))
    took = time.monotonic() - t0
    return r.killed == "cpu limit" and took < 15, f"killed {r.killed} after {took:.1f} s"


@attack("burn CPU between calls", ALL)
def idle_burn(ctx: Ctx) -> Verdict:
    token = _token()
    code = f"""
        import subprocess, sys, threading
        def spin():
            while True:
                pass
        threading.Thread(target=spin, daemon=True).start()
        subprocess.Popen([sys.executable, "-c", "while True: pass", {_split(token)}])
    """
    limits = ctx.limits.model_copy(update={"cpu_seconds": 1.0})
    with ctx.session(limits=limits) as py:
        py.run(textwrap.dedent(code))
        # Idle until the burners had more than a call's CPU (a loaded machine gives them less).
        start, deadline = _cpu_of(py), time.monotonic() + 15
        while _cpu_of(py) - start < 1.5 and time.monotonic() < deadline:
            time.sleep(0.2)
        r = py.run("1")
        stopped = _gone(token, 1.0)
    noticed = any("between calls" in w for w in r.warnings)
    return noticed and stopped, f"warned: {noticed}, burners stopped: {stopped}"


def _cpu_of(py: PythonSession) -> float:
    """CPU seconds of the session's sandbox, as the harness counts them."""
    proc = py._proc
    return (proc.cpu_used() or 0.0) if proc is not None else 0.0


@attack("RLIMIT_CPU missing in a session", ALL)
def session_rlimit(ctx: Ctx) -> Verdict:
    with ctx.session() as py:
        r = py.run("import resource; resource.getrlimit(resource.RLIMIT_CPU)")
    soft = int((r.value or "(-1,").strip("()").split(",")[0])
    return soft > 0, f"RLIMIT_CPU soft {soft}"


@attack("hold memory in many processes", STRONG | {"process+uid", "process"})
def memory_total(ctx: Ctx) -> Verdict:
    code = """
        import os, subprocess, sys, time
        child = "import time; b = b'1' * (100 * 1024**2); open('held-%d' % os.getpid(), 'w').close(); time.sleep(20)"
        procs = [subprocess.Popen([sys.executable, "-c", "import os;" + child]) for _ in range(5)]
        time.sleep(3)
        held = [p for p in procs if p.poll() is None and os.path.exists("held-%d" % p.pid)]
        print("held", len(held))
        for p in procs:
            p.kill()
    """
    out, how = ctx.run(code)
    if not out.startswith("held") and "killed" in how:
        # A limit ended the code before it could report (the memory total's reclaim can burn
        # the CPU budget under load): nothing was held past the limit.
        return True, f"stopped by a limit before holding memory ({how})"
    held = int(out.split()[1]) if out.startswith("held") else -1
    total = held * 100
    return 0 <= total <= ctx.limits.memory_bytes >> 20, f"{total} MiB held at once ({how})"


@attack("fill the disk from the workspace", ALL)
def disk_fill(ctx: Ctx) -> Verdict:
    code = """
        n = 0
        try:
            for i in range(32):
                with open("fill-%d" % i, "wb") as f:
                    f.write(b"0" * 8 * 1024**2)
                n += 8
        except OSError as e:
            print("stopped", e)
        print("wrote", n)
    """
    out, _ = ctx.run(code)
    wrote = int(out.split("wrote")[-1].split()[0])
    return wrote <= (ctx.limits.workspace_bytes >> 20) + 8, f"wrote {wrote} MiB"


@attack("exhaust inodes in the workspace", ALL)
def inode_bomb(ctx: Ctx) -> Verdict:
    code = """
        n = 0
        try:
            for i in range(20000):
                open("f%d" % i, "w").close()
                n += 1
        except OSError:
            pass
        print("made", n)
    """
    out, _ = ctx.run(code)
    made = int(out.split()[-1])
    return made <= ctx.limits.workspace_inodes + 100, f"made {made} files"


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


@attack("read the harness's /proc/PID/environ", OWN_UID)
def environ(ctx: Ctx) -> Verdict:
    env = {**os.environ, "OMNILAB_ATTACK_KEY": "sk-ENVIRON-SECRET"}
    victim = subprocess.Popen(["sleep", "30"], env=env)
    try:
        code = f"""
            try:
                print(open("/proc/{victim.pid}/environ", "rb").read())
            except OSError as e:
                print("refused", e)
        """
        out, how = ctx.run(code)
    finally:
        victim.kill()
        victim.wait()
    return "SECRET" not in out, how


@attack("kill a harness process", OWN_UID)
def kill_harness(ctx: Ctx) -> Verdict:
    victim = subprocess.Popen(["sleep", "30"])
    try:
        ctx.run(
            f"import os\ntry:\n    os.kill({victim.pid}, 9)\nexcept OSError as e:\n    print(e)"
        )
        time.sleep(0.2)
        alive = victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
    return alive, f"victim alive: {alive}"


@attack("daemon kills its launcher", ALL)
def kill_launcher(ctx: Ctx) -> Verdict:
    token = _token()
    code = f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                try:
                    os.kill(os.getppid(), 9)
                except OSError:
                    pass
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", {_split(token)}])
            os._exit(0)
        time.sleep(0.5)
    """
    with ctx.session() as py:
        py.run(textwrap.dedent(code))
    return _gone(token), "daemon gone after the session closed"


# --- issue 32 part A: harness reads ---
# Sandboxed code plants things in its workspace for the (root) harness to read afterwards: each
# attack checks what the harness does with them, so each is contained at every level.


def _secret(ctx: Ctx) -> tuple[Path, bytes]:
    """A root-only file (0600 in a 0700 folder) with unique bytes."""
    folder = ctx.root / f"private-{uuid.uuid4().hex[:6]}"
    folder.mkdir(mode=0o700)
    data = f"ROOT-ONLY-{uuid.uuid4().hex}".encode()
    (folder / "shadow").write_bytes(data)
    (folder / "shadow").chmod(0o600)
    return folder / "shadow", data


def _plant_links(ctx: Ctx, ws: Path, folder: str, target: Path) -> str:
    code = f"""
        import glob, os
        os.makedirs({folder!r}, exist_ok=True)
        for p in glob.glob({folder + "/*"!r}) or [{folder + "/image_1.jpg"!r}]:
            if os.path.lexists(p):
                os.unlink(p)
            os.symlink({str(target)!r}, p)
        print(sorted(os.listdir({folder!r})))
    """
    with ctx.session(ws) as py:
        return py.run(textwrap.dedent(code)).stdout.strip()


@attack("views: planted link sent to the model", ALL)
def views_link(ctx: Ctx) -> Verdict:
    from PIL import Image as PILImage

    from omnilab.agents.views import save_view
    from omnilab.content import Image
    from omnilab.models.capabilities import Capabilities
    from omnilab.models.providers.openai_wire import wire_messages
    from omnilab.models.types import Message

    target, data = _secret(ctx)
    ws = ctx.ws()
    view = save_view(PILImage.new("RGB", (16, 16)), ws / "views", "image_1.jpg")
    planted = _plant_links(ctx, ws, "views", target)
    try:
        wire = wire_messages([Message.user(Image(path=view))], Capabilities(image=True), "m")
    except Exception as exc:
        return True, f"planted {planted}; refused: {exc}"
    leaked = base64.b64encode(data).decode() in str(wire)
    return (
        not leaked,
        f"planted {planted}; the root-only file {'was' if leaked else 'was not'} sent",
    )


@attack("perception: planted link copied into a report", ALL)
def report_link(ctx: Ctx) -> Verdict:
    from omnilab.content import Audio, Image
    from omnilab.report.media import MediaCopier

    target, data = _secret(ctx)
    ws = ctx.ws()
    planted = _plant_links(ctx, ws, "perception", target)
    report = ctx.root / f"report-{uuid.uuid4().hex[:6]}"
    gone = ctx.root / "gone"
    with MediaCopier(report) as copier:
        for name in planted.strip("[]").replace("'", "").split(", "):
            for part in (Audio(path=gone / name), Image(path=gone / name)):
                copier.ref(part, search=(ws,))
    copied = [p.read_bytes() for p in report.rglob("*") if p.is_file()]
    leaked = any(data in blob for blob in copied)
    return not leaked, f"planted {planted}; {len(copied)} files in the report's media"


@attack("media: planted link to an outside video sent to the model", ALL)
def media_link(ctx: Ctx) -> Verdict:
    """The decoders (probe, frames, soundtrack) open a workspace file by _wsread's rules too: a
    link to a root-only video (another task's media, say) must not reach the model."""
    from omnilab.content import Video
    from omnilab.media import synth
    from omnilab.models.capabilities import Capabilities
    from omnilab.models.providers.openai_wire import wire_messages
    from omnilab.models.types import Message

    folder = ctx.root / f"private-{uuid.uuid4().hex[:6]}"
    folder.mkdir(mode=0o700)
    target = synth.make_video(folder / "labels.mp4", duration=2.0, gop_seconds=1.0)
    target.chmod(0o600)
    ws = ctx.ws()
    code = f"import os; os.symlink({str(target)!r}, 'clip.mp4'); print(os.listdir('.'))"
    with ctx.session(ws) as py:
        planted = py.run(code).stdout.strip()
    caps = Capabilities(image=True, audio=True)
    try:
        wire = wire_messages([Message.user(Video(path=ws / "clip.mp4"))], caps, "m")
    except Exception as exc:
        return True, f"planted {planted}; refused: {exc}"
    leaked = "image_url" in str(wire) or "input_audio" in str(wire)
    return (
        not leaked,
        f"planted {planted}; the root-only video {'was' if leaked else 'was not'} sent",
    )


def _blocks(fn: Callable[[], object], fifo: Path, wait: float = 3.0) -> tuple[bool, str]:
    """Runs ``fn`` in a thread: (returned in time, what it said). A thread stuck opening
    ``fifo`` is released by opening its other end."""
    said: list[str] = []

    def call() -> None:
        try:
            said.append(f"returned {str(fn())[:80]}")
        except Exception as exc:
            said.append(f"refused: {exc}")

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(wait)
    if worker.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(wait)
        return False, "the harness hung opening the FIFO"
    return True, said[0] if said else "?"


@attack("image_read of a FIFO", ALL)
def fifo_read(ctx: Ctx) -> Verdict:
    from omnilab.agents.coder.tools import read_workspace_image

    ws = ctx.ws()
    with ctx.session(ws) as py:  # read while the sandbox lives (FIFOs are not copied back)
        made = py.run("import os; os.mkfifo('t.png'); print('made')").stdout.strip()
        done, said = _blocks(lambda: read_workspace_image(ws, "t.png", 256), ws / "t.png")
    return done and made == "made", f"FIFO {made or 'not made'}; {said}"


_HUGE_PNG = """
    import struct, zlib
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    side = 13000
    packer = zlib.compressobj(9)
    row = b"\\0" * (side + 1)
    body = b"".join(packer.compress(row * 500) for _ in range(side // 500))
    body += packer.compress(row * (side % 500)) + packer.flush()
    head = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", head) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
    open("big.png", "wb").write(png)
    print(len(png))
"""


@attack("image_read of a 13000x13000 PNG", ALL)
def huge_image(ctx: Ctx) -> Verdict:
    from omnilab.agents.coder.tools import read_workspace_image

    ws = ctx.ws()
    with ctx.session(ws) as py:
        size = py.run(textwrap.dedent(_HUGE_PNG)).stdout.strip()
    try:
        _, _, shape = read_workspace_image(ws, "big.png", 256)
    except ValueError as exc:
        return "pixels" in str(exc), f"{size} bytes on disk; refused: {exc}"
    return False, f"{size} bytes on disk decoded to {shape[0]}x{shape[1]} in the harness"


_DEEP = 1500


@attack("1,500-level tree in the workspace", ALL)
def deep_tree(ctx: Ctx) -> Verdict:
    from omnilab import _wswalk
    from omnilab.sandbox._safefs import open_folder, remove_children
    from omnilab.sandbox._wsfs import _private

    ws = ctx.ws()
    code = f"""
        import os
        for i in range({_DEEP}):
            if i % 100 == 0:
                open(f"f{{i}}", "w").write(str(i))
            os.mkdir("d")
            os.chdir("d")
        open("leaf.txt", "w").write("LEAF")
        print("made")
    """
    try:
        with ctx.session(ws) as py:
            made = py.run(textwrap.dedent(code)).stdout.strip()
        mounted = os.path.ismount(_private(str(ws)))
        names = {n for folder in _wswalk.walk(ws) for n, _ in folder.entries}
        kept = {"leaf.txt", "f0", f"f{_DEEP - 100}"} <= names
        again = run(["true"], workspace=ws, isolation=ctx.level)
        trouble = [w for w in again.warnings if "fail" in w]
        ok = made == "made" and kept and not mounted and again.ok and not trouble
        detail = f"files kept: {kept}, tmpfs left: {mounted}, next start ok: {again.ok} {trouble}"
        return ok, detail
    finally:
        with open_folder(ws) as fd:  # shutil.rmtree (the scratch folder's cleanup) recurses
            remove_children(fd)


@attack("swap a folder for a link during the snapshot", ALL)
def walk_race(ctx: Ctx) -> Verdict:
    from omnilab.tools.code import _snapshot

    secret_dir = ctx.root / f"private-{uuid.uuid4().hex[:6]}"
    secret_dir.mkdir(mode=0o700)
    (secret_dir / "ROOTONLYNAME").write_text("x")
    ws = ctx.ws()
    # renameat2(RENAME_EXCHANGE) swaps each folder with a link to the root-only folder and
    # back, atomically, while the harness (root) takes its created-files snapshot.
    code = f"""
        import ctypes, os, time
        libc = ctypes.CDLL(None, use_errno=True)
        for i in range(40):
            os.makedirs(f"d{{i}}/sub", exist_ok=True)
            if not os.path.lexists(f"l{{i}}"):
                os.symlink({str(secret_dir)!r}, f"l{{i}}")
        end = time.monotonic() + 1.5
        swaps = 0
        while time.monotonic() < end:
            for i in range(40):
                libc.renameat2(-100, f"d{{i}}".encode(), -100, f"l{{i}}".encode(), 2)
                swaps += 1
        print(swaps)
    """
    seen: set[str] = set()
    walks = 0
    with ctx.session(ws) as py:
        racer = threading.Thread(target=lambda: seen.add(py.run(textwrap.dedent(code)).stdout))
        racer.start()
        while racer.is_alive():
            seen.update(_snapshot(ws))
            walks += 1
        racer.join()
    leaked = any("ROOTONLYNAME" in name for name in seen)
    return not leaked, f"{walks} snapshots during the swaps; root-only names seen: {leaked}"


# --- issue 32 part B: visibility and pipes ---
# Sandboxed code sees an allow-list of the machine (system folders, the Python install, omnilab's
# package, its workspace); each attack below plants a secret where the harness keeps something of
# its own (outside the temporary folders, which are private in the sandbox anyway) and looks for
# it from inside, with the harness's working directory elsewhere.


@contextlib.contextmanager
def host_folder() -> Iterator[Path]:
    """A folder outside the system's temporary folders (which the strong levels replace by
    private ones anyway): beside this script, in the checkout, removed afterwards. World-readable
    on purpose: the ``process`` level then shows what it cannot hide."""
    root = Path(__file__).resolve().parent.parent / ".sandbox-attacks" / uuid.uuid4().hex[:8]
    root.mkdir(parents=True, mode=0o755)
    for folder in (root, root.parent):
        folder.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        with contextlib.suppress(OSError):
            root.parent.rmdir()


def _plant(folder: Path, name: str = "secret.txt") -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o755)
    secret = folder / name
    secret.write_text(f"SECRET-{uuid.uuid4().hex}")
    secret.chmod(0o644)
    return secret


_LOOK = """
import os
for path in PATHS:
    try:
        if os.path.isdir(path):
            print("listed", path, *sorted(os.listdir(path)), sep="\\t")
        else:
            print("read", path, open(path).read()[:60], sep="\\t")
    except OSError as e:
        pass
"""


def _looks(ctx: Ctx, paths: list[Path], **kw: object) -> Verdict:
    """Runs code that reads or lists each of ``paths`` with the harness's cwd elsewhere;
    contained when it read none of them and listed nothing but the folders on the way to what
    is shown on purpose (the workspace and omnilab's package keep their paths)."""
    import omnilab

    ws = kw.get("ws") or ctx.ws()
    # Shown on purpose: the workspace, omnilab's package and the Python installation (a venv
    # may live inside the checkout, as CI's does: its name is on the way, nothing else is).
    shown = [Path(str(ws)), Path(omnilab.__file__), Path(sys.prefix), Path(sys.base_prefix)]
    on_the_way = {part for path in shown for part in path.resolve().parts}
    here = Path.cwd()
    os.chdir(ctx.root)
    try:
        code = _LOOK.replace("PATHS", repr([str(p) for p in paths]))
        out, how = ctx.run(code, **{**kw, "ws": ws})
    finally:
        os.chdir(here)
    saw = []
    for line in out.splitlines():
        what, path, *rest = [*line.split("\t"), ""]
        if what == "read" or [name for name in rest if name and name not in on_the_way]:
            saw.append(f"{what} {path}: {' '.join(rest)[:60]}")
    return not saw, "; ".join(saw)[:240] or f"saw nothing ({how})"


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    old = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@attack("read the script folder through a symlinked argv[0]", STRONG)
def script_folder(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        secret = _plant(host / "tools" / "harness")
        (host / "tools" / "harness" / "run.py").write_text("# the harness\n")
        (host / "bin").mkdir(mode=0o755)
        (host / "bin" / "run.py").symlink_to(host / "tools" / "harness" / "run.py")
        argv = sys.argv[:]
        sys.argv[0] = str(host / "bin" / "run.py")
        try:
            return _looks(ctx, [secret, secret.parent])
        finally:
            sys.argv[:] = argv


@attack("read a PYTHONPATH entry", STRONG)
def pythonpath_entry(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        secret = _plant(host / "pylib", "settings_local.py")
        path = list(sys.path)
        sys.path.append(str(host / "pylib"))
        try:
            with _environ(PYTHONPATH=str(host / "pylib")):
                return _looks(ctx, [secret, secret.parent])
        finally:
            sys.path[:] = path


@attack("read the source checkout from another cwd", STRONG)
def source_checkout(ctx: Ctx) -> Verdict:
    import omnilab

    package = Path(omnilab.__file__).resolve().parent
    checkout = package.parent.parent if package.parent.name == "src" else package.parent
    if not (checkout / "pyproject.toml").exists():
        return True, "n/a (omnilab is installed, not run from a checkout)"
    return _looks(ctx, [checkout / "pyproject.toml", checkout, package.parent])


@attack("read results, labels and media of an eval --out run", STRONG)
def run_folder(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        run_dir = host / "runs" / "eval-1"
        results = _plant(run_dir, "results.jsonl")
        other = _plant(run_dir / "trajectories", "task-2.jsonl")
        labels = _plant(host / "data", "tasks.jsonl")
        media = _plant(host / "media", "clip.mp4")
        ws = run_dir / "workspaces" / "task-1"
        ws.mkdir(parents=True)
        ws.chmod(0o755)
        paths = [results, other, other.parent, labels, media, media.parent, run_dir]
        return _looks(ctx, [*paths, ws / ".." / ".." / "results.jsonl"], ws=ws)


@attack("read other users' runs under serve --runs-dir", STRONG)
def serve_runs(ctx: Ctx) -> Verdict:
    with host_folder() as host:
        runs = host / "serve-runs"
        upload = _plant(runs / "run-of-alice" / "uploads", "photo.png")
        ws = runs / "run-of-bob" / "workspace"
        ws.mkdir(parents=True)
        ws.chmod(0o755)
        return _looks(ctx, [upload, upload.parent, runs], ws=ws)


@attack("read caches and config folders", STRONG)
def caches(ctx: Ctx) -> Verdict:
    from omnilab.config import get_settings

    with host_folder() as host:
        found = [
            _plant(host / "xdg-cache" / "huggingface"),
            _plant(host / "xdg-config" / "gh"),
            _plant(host / "omnilab-cache" / "models"),
        ]
        env = {
            "XDG_CACHE_HOME": str(host / "xdg-cache"),
            "XDG_CONFIG_HOME": str(host / "xdg-config"),
            "OMNILAB_CACHE_DIR": str(host / "omnilab-cache"),
        }
        with _environ(**env):
            get_settings.cache_clear()
            try:
                return _looks(ctx, [*found, *(f.parent.parent for f in found)])
            finally:
                get_settings.cache_clear()


@attack("escape sequences reach the terminal", ALL)
def terminal_escapes(ctx: Ctx) -> Verdict:
    import io

    from rich.markup import escape

    from omnilab.cli._console import inert_console
    from omnilab.terminal import inert

    hostile = r"print('\x1b]0;owned\x07\x1b[2J\x1b[31m[bold]red[/bold]\x9b\r\u202eanswer')"
    out, how = ctx.run(hostile)
    screen = io.StringIO()
    console = inert_console(file=screen, force_terminal=True, color_system="standard")
    console.print(f"[green]tool:[/] {escape(out)}", highlight=False)
    console.print(out, markup=False)
    shown = screen.getvalue() + inert(out)
    raw = [s for s in ("\x1b]", "\x1b[2J", "\x9b", "\r", "\u202e", "\x07") if s in shown]
    return bool(out) and not raw, f"raw sequences on the terminal: {raw!r} ({how})"


@attack("flood the shell's completion descriptor", ALL)
def completion_flood(ctx: Ctx) -> Verdict:
    from omnilab.sandbox import ShellSession

    limits = ctx.limits.model_copy(update={"wall_seconds": 6.0})
    with ShellSession(ctx.ws(), limits=limits, isolation=ctx.level) as sh:
        sh.run("true")
        rss = _rss_mb()
        started = time.monotonic()
        # bash keeps the completion pipe on a saved descriptor (10) while the command runs;
        # unbounded, the harness read all of it for as long as the command ran.
        r = sh.run("for fd in 10 11 12 13; do yes >&$fd 2>/dev/null; done")
        took = time.monotonic() - started
        grew = _rss_mb() - rss
        after = sh.run("echo alive")
    ok = took < 5.0 and grew < 16 and after.stdout.strip() == "alive"
    return ok, f"ended after {took:.1f} s, harness memory +{grew:.0f} MB, {r.warnings[:1]}"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- running -----------------------------------------------------------------------------------


def interpreter_for(level: IsolationLevel) -> str | None:
    """An interpreter the level's sandbox can run: the harness's own, or (process level, root
    harness, own interpreter out of a stranger's reach) the system's."""
    if level is not IsolationLevel.PROCESS or os.geteuid() != 0:
        return sys.executable
    for candidate in (sys.executable, "/usr/bin/python3"):
        real = os.path.realpath(candidate)
        if Path(real).exists() and closed_ancestor(real) is None:
            return candidate
    return None


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A folder a sandbox's own uid can pass through (in the system's temporary folder)."""
    root = Path(tempfile.mkdtemp(prefix="omnilab-attacks-"))
    root.chmod(0o711)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def available_levels(wanted: list[str]) -> list[IsolationLevel]:
    levels = []
    for name in wanted:
        with contextlib.suppress(SandboxError):
            levels.append(resolve_level(name))
    return levels


def run_attack(name: str, level: IsolationLevel, root: Path) -> tuple[str, str]:
    """``(verdict, detail)``: verdict is contained, escaped, or n/a."""
    python = interpreter_for(level)
    if python is None:
        return "n/a", "no interpreter the sandbox uid can reach"
    ctx = Ctx(level, root, python)
    try:
        contained, detail = ATTACKS[name](ctx)
    except SandboxError as exc:
        return "refused", str(exc)
    return ("contained" if contained else "escaped"), detail


def overhead(n: int) -> None:
    """Prints session start-up, per-call and one-shot ``run`` times at the default level (the
    figures of docs/performance.md; compare two versions by running both at the same time)."""

    starts: list[float] = []
    calls: list[float] = []
    runs: list[float] = []
    with scratch() as root:
        for i in range(n):
            ws = root / f"ws{i}"
            ws.mkdir()
            with PythonSession(ws) as py:
                t = time.perf_counter()
                py.run("1")
                starts.append(time.perf_counter() - t)
                for _ in range(20):
                    t = time.perf_counter()
                    py.run("x = 1")
                    calls.append(time.perf_counter() - t)
            t = time.perf_counter()
            run(["true"], workspace=ws)
            runs.append(time.perf_counter() - t)
    for name, xs in (("session start-up", starts), ("per call", calls), ("run(['true'])", runs)):
        p10 = sorted(xs)[len(xs) // 10] * 1000
        print(f"{name:17} median {statistics.median(xs) * 1000:8.3f} ms  p10 {p10:8.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="bwrap,namespaces,process")
    parser.add_argument("--markdown", action="store_true", help="Print a Markdown table.")
    parser.add_argument(
        "--overhead", type=int, metavar="N", help="Time N sandbox starts instead of attacking."
    )
    args = parser.parse_args()
    if args.overhead:
        overhead(args.overhead)
        return
    levels = available_levels(args.levels.split(","))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rows: dict[str, list[str]] = {}
    with scratch() as root:
        for name in ATTACKS:
            rows[name] = []
            for level in levels:
                verdict, detail = run_attack(name, level, root)
                rows[name].append(verdict)
                print(f"{name:42} {level.value:11} {verdict:9} {detail}", file=sys.stderr)
    heads = [
        f"{lvl.value} (own uid)"
        if lvl is IsolationLevel.PROCESS and os.geteuid() == 0
        else lvl.value
        for lvl in levels
    ]
    if args.markdown:
        print("| attack | " + " | ".join(heads) + " |")
        print("|---" * (len(heads) + 1) + "|")
        for name, verdicts in rows.items():
            print(f"| {name} | " + " | ".join(verdicts) + " |")
    else:
        print(f"{'attack':42} " + " ".join(f"{h:20}" for h in heads))
        for name, verdicts in rows.items():
            print(f"{name:42} " + " ".join(f"{v:20}" for v in verdicts))
    escaped = sum(v == "escaped" for vs in rows.values() for v in vs[:1])
    print(f"\nescapes at the strongest level ({levels[0].value}): {escaped}" if levels else "")


if __name__ == "__main__":
    main()
