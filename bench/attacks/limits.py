"""Resource limits a sandboxed run must not slip: per-call CPU timers, CPU burnt between calls,
RLIMIT_CPU in sessions, the memory total over many processes, disk and inodes of the workspace."""

from __future__ import annotations

import textwrap
import time

from attacks.registry import ALL, STRONG, Ctx, Verdict, attack
from attacks.traces import _gone, _split, _token
from omnilab.sandbox import PythonSession


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
