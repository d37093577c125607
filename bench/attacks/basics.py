"""The first catalogue (the attacks of ``tests/sandbox/test_attacks.py``, which checks them with
finer assertions): CPU, wall-clock, memory and process limits, daemons, files outside the
workspace, the network, output floods, a killed harness. Closed: a new attack goes in the family
module it belongs to (see ``attacks/README.md``)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

from attacks.registry import ALL, OWN_UID, STRONG, Ctx, Verdict, attack
from attacks.traces import _alive_with, _gone, _split, _token
from omnilab.sandbox import run


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
