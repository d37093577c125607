"""Persistent sessions: a Python interpreter and a bash, both in the sandbox."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from omnilab.config import SandboxLimits, get_settings
from omnilab.sandbox import (
    IsolationLevel,
    PythonSession,
    SandboxError,
    ShellSession,
    isolation_level,
)
from omnilab.sandbox._shell import bash_quote

Scan = Callable[..., list[int]]
# A long sleep whose command line carries the test's token (sleep itself rejects extra words).
SLEEP = "import time; time.sleep(300)"


@pytest.fixture()
def session_limits() -> SandboxLimits:
    return SandboxLimits(cpu_seconds=1, wall_seconds=10, memory_bytes=1024**3, output_bytes=2000)


@pytest.fixture()
def py(ws: Path, session_limits: SandboxLimits) -> PythonSession:
    with PythonSession(ws, limits=session_limits) as session:
        yield session  # type: ignore[misc]


@pytest.fixture()
def sh(ws: Path, session_limits: SandboxLimits) -> ShellSession:
    # bash's own CPU limit must not end a builtin loop before the wall-clock timeouts tested here
    limits = session_limits.model_copy(update={"cpu_seconds": 30})
    with ShellSession(ws, limits=limits) as session:
        yield session  # type: ignore[misc]


def test_python_variables_survive_and_last_value_is_shown_once(py: PythonSession) -> None:
    first = py.run(
        "calls = []\ndef f():\n    calls.append(1)\n    return len(calls)\nprint('ready')"
    )
    assert first.ok and first.stdout == "ready\n" and first.value is None
    second = py.run("f()")  # evaluated once: the reference implementation ran it twice
    assert second.value == "1" and second.stdout == ""
    assert py.run("len(calls)").value == "1"
    assert py.run("_ + 41").value == "42"  # like a notebook, _ is the last value
    assert py.run("x = 5").value is None and py.run("None").value is None
    assert first.isolation is isolation_level() and not first.state_lost


def test_python_exceptions_come_back_as_tracebacks(py: PythonSession) -> None:
    r = py.run("def g():\n    return 1 / 0\n\ng()")
    assert not r.ok and r.error is not None
    assert r.error.startswith("Traceback") and "ZeroDivisionError" in r.error
    assert 'File "<cell-1>", line 2, in g' in r.error and "return 1 / 0" in r.error
    assert "_pydriver" not in r.error and "_run_cell" not in r.error  # only the model's frames
    syntax = py.run("def broken(:")
    assert syntax.error is not None and "SyntaxError" in syntax.error
    exiting = py.run("raise SystemExit(2)")
    assert exiting.error is not None and "SystemExit: 2" in exiting.error
    assert py.run("1 + 1").value == "2"  # the session goes on after all three


def test_python_output_of_child_programs_and_truncation(py: PythonSession) -> None:
    r = py.run("import os, sys\nos.system('echo from-a-child')\nprint('e', file=sys.stderr)")
    assert r.stdout == "from-a-child\n" and r.stderr == "e\n"
    big = py.run("print('A' + 'x' * 100_000 + 'Z')")
    assert big.stdout.startswith("Axxx") and big.stdout.endswith("xxZ\n")
    assert "bytes cut" in big.stdout and len(big.stdout) < 2100
    value = py.run("'v' * 10_000")
    assert value.value is not None and "characters cut" in value.value


def test_python_files_stay_in_the_workspace(py: PythonSession, ws: Path) -> None:
    py.run("open('result.csv', 'w').write('a,b\\n')")
    assert (ws / "result.csv").read_text() == "a,b\n"
    (ws / "helper.py").write_text("ANSWER = 42\n")
    assert py.run("import helper; helper.ANSWER").value == "42"  # workspace modules import


def test_python_timeout_restarts_the_interpreter(py: PythonSession) -> None:
    py.run("kept = 1")
    t0 = time.monotonic()
    r = py.run("import time; print('before', flush=True); time.sleep(600)", timeout=1)
    assert r.timed_out and r.killed == "wall-clock timeout" and r.state_lost
    assert r.stdout == "before\n" and time.monotonic() - t0 < 4
    after = py.run("'kept' in globals()")
    assert after.value == "False" and after.state_lost and py.restarts == 1
    assert any("restarted" in w for w in after.warnings)
    assert py.run("'kept' in globals()").state_lost is False


def test_python_cpu_and_memory_limits_keep_the_session(py: PythonSession) -> None:
    py.run("kept = 'yes'")
    spin = py.run("while True: pass")
    assert spin.killed == "cpu limit" and spin.error is not None and not spin.timed_out
    assert "CpuLimitExceeded" in spin.error and "_on_cpu_limit" not in spin.error
    big = py.run("b = bytearray(10 * 1024**3)")
    assert big.killed == "memory limit" and big.error is not None and "MemoryError" in big.error
    assert py.run("kept").value == "'yes'"  # neither limit cost the variables


def test_python_interpreter_death_is_reported(py: PythonSession) -> None:
    py.run("v = 1")
    r = py.run("import os; os._exit(4)")
    assert r.error == "the interpreter died (exit status 4)" and r.state_lost
    assert py.run("'v' in globals()").value == "False"


def test_python_close_kills_everything(ws: Path, token: str, processes_with: Scan) -> None:
    session = PythonSession(ws)
    sleeper = (
        f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {SLEEP!r}, '{token}'])"
    )
    session.run(sleeper)
    assert processes_with(token, wait=2)
    session.close()
    assert processes_with(token) == []


def test_shell_keeps_cwd_and_variables(sh: ShellSession, ws: Path) -> None:
    assert sh.run("mkdir -p sub && cd sub && export GREETING=hi && pwd").stdout == f"{ws}/sub\n"
    r = sh.run('echo "$GREETING from $(pwd)"; f() { echo fn; }')
    assert r.stdout == f"hi from {ws}/sub\n" and r.exit_code == 0
    assert sh.run("f").stdout == "fn\n"
    failed = sh.run("ls missing-file")
    assert failed.exit_code == 2 and "missing-file" in failed.stderr and failed.stdout == ""
    assert failed.isolation is isolation_level()


def test_shell_quoting_survives_anything(sh: ShellSession) -> None:
    text = 'it\'s "quoted" $HOME `x` \\ back\nnew line ünï 💡 100%'
    r = sh.run(f"cat <<'EOF'\n{text}\nEOF")
    assert r.stdout == text + "\n"
    assert bash_quote("a b") == "$'a b'" and "\\x27" in bash_quote("'")
    syntax = sh.run("if then")
    assert syntax.exit_code == 2 and "syntax error" in syntax.stderr
    assert sh.run("echo still here").stdout == "still here\n"


def test_shell_timeout_kills_the_command_and_keeps_the_shell(
    sh: ShellSession, token: str, processes_with: Scan
) -> None:
    sh.run("export KEPT=1; cd tmp")
    t0 = time.monotonic()
    r = sh.run(f"python -c {SLEEP!r} {token}", timeout=1)
    assert r.timed_out and r.exit_code == 137 and not r.state_lost
    assert time.monotonic() - t0 < 4 and processes_with(token) == []
    assert sh.run("echo $KEPT $(basename $PWD)").stdout == "1 tmp\n"


def test_shell_timeout_stops_a_loop_of_programs(sh: ShellSession) -> None:
    sh.run("export KEPT=1")
    r = sh.run("for i in 1 2 3 4; do sleep 100; done; echo loop-ended", timeout=1)
    assert r.timed_out and not r.state_lost and r.stdout == "loop-ended\n"
    assert sh.run("echo $KEPT").stdout == "1\n"


def test_shell_stuck_in_a_builtin_is_restarted(sh: ShellSession) -> None:
    sh.run("export KEPT=1")
    r = sh.run("while :; do :; done", timeout=1)
    assert r.timed_out and r.state_lost and any("restarted" in w for w in r.warnings)
    after = sh.run("echo ${KEPT:-gone}")
    assert after.stdout == "gone\n" and after.state_lost and sh.restarts == 1


def test_shell_killed_by_its_cpu_limit_says_so(ws: Path, session_limits: SandboxLimits) -> None:
    with ShellSession(ws, limits=session_limits) as shell:  # 1 CPU second for bash itself
        r = shell.run("while :; do :; done", timeout=8)
        assert r.killed == "cpu limit" and r.signal == "SIGXCPU" and r.state_lost
        assert not r.timed_out and shell.run("echo again").stdout == "again\n"


def test_shell_exit_restarts(sh: ShellSession) -> None:
    r = sh.run("exit 3")
    assert r.exit_code is None and r.state_lost
    assert sh.run("echo back").stdout == "back\n"


def test_shell_background_jobs_die_with_the_session(
    ws: Path, token: str, processes_with: Scan
) -> None:
    with ShellSession(ws) as shell:
        r = shell.run(f"(setsid python -c {SLEEP!r} {token} &); sleep 0.2; echo started")
        assert r.stdout == "started\n" and processes_with(token, wait=2)
    assert processes_with(token) == []


def test_shell_output_truncated_head_and_tail(sh: ShellSession) -> None:
    r = sh.run("echo BEGIN; yes | head -c 5000000; echo; echo END")
    assert r.stdout.startswith("BEGIN\n") and r.stdout.endswith("END\n")
    assert r.stdout_bytes > 5_000_000 and "bytes cut" in r.stdout


def test_sessions_at_process_level_say_so(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_SANDBOX__UNSAFE_PROCESS_AS_ROOT", "1")  # pytest's tmp is 0700
    get_settings.cache_clear()
    with ShellSession(ws, isolation="process") as shell:
        r = shell.run("echo ok")
    assert r.isolation is IsolationLevel.PROCESS and r.network
    assert any("outside its workspace" in w for w in r.warnings)


def test_session_with_a_bad_workspace_raises_and_leaks_nothing(tmp_path: Path) -> None:
    before = len(list(Path("/proc/self/fd").iterdir()))
    for session in (PythonSession(tmp_path / "missing"), ShellSession(tmp_path / "missing")):
        with pytest.raises(SandboxError, match="not an existing folder"):
            session.run("1")
    assert len(list(Path("/proc/self/fd").iterdir())) == before
