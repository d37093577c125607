"""The harness's processes: their environment, killing them, a daemon that kills its launcher."""

from __future__ import annotations

import os
import subprocess
import textwrap
import time

from attacks.registry import ALL, OWN_UID, Ctx, Verdict, attack
from attacks.traces import _gone, _split, _token


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
