"""``run``: what the program sees (cwd, environment), what comes back, and caller errors."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from omnilab.config import get_settings
from omnilab.sandbox import (
    ExecResult,
    IsolationLevel,
    SandboxError,
    isolation_level,
    isolation_report,
    run,
)
from omnilab.sandbox._env import looks_secret, sandbox_env
from omnilab.sandbox._headtail import HeadTail

Available = Callable[[str], IsolationLevel]


def test_exit_code_output_and_level(ws: Path) -> None:
    r = run(["bash", "-c", "echo out; echo err >&2; exit 3"], workspace=ws)
    assert (r.exit_code, r.stdout, r.stderr) == (3, "out\n", "err\n")
    assert not r.ok and r.killed is None and r.signal is None
    assert r.isolation is isolation_level()


def test_workspace_is_cwd_home_and_tmpdir(ws: Path) -> None:
    r = run(["bash", "-c", 'pwd; echo "$HOME"; echo "$TMPDIR"; echo hi > note.txt'], workspace=ws)
    assert r.stdout.split() == [str(ws), str(ws), str(ws / "tmp")]
    assert (ws / "note.txt").read_text() == "hi\n"  # files stay in the workspace


def test_stdin_is_passed_and_closed(ws: Path) -> None:
    r = run(["wc", "-c"], workspace=ws, stdin="x" * 200_000)
    assert r.ok and r.stdout.strip() == "200000"
    assert run(["cat"], workspace=ws).stdout == ""  # no stdin: /dev/null, not a hang


def test_sandboxed_python_has_the_harness_packages(ws: Path) -> None:
    r = run(["python", "-c", "import pydantic, sys; print(sys.prefix)"], workspace=ws)
    assert r.ok and r.stdout.strip() == sys.prefix


def test_harness_secrets_never_reach_the_program(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "VALUE-FROM-HARNESS-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "VALUE-FROM-HARNESS-2")
    extra = {
        "OPENAI_API_KEY": "VALUE-PASSED-1",
        "GITHUB_TOKEN": "VALUE-PASSED-2",
        "MY_SETTING": "visible",
    }
    r = run(["env"], workspace=ws, env=extra)
    assert "VALUE-" not in r.stdout and "OPENAI" not in r.stdout and "AWS" not in r.stdout
    assert "MY_SETTING=visible" in r.stdout
    assert any("GITHUB_TOKEN, OPENAI_API_KEY" in w for w in r.warnings)


def test_allow_env_lets_a_named_secret_through(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_SANDBOX__ALLOW_ENV", '["HF_TOKEN"]')
    get_settings.cache_clear()
    r = run(["env"], workspace=ws, env={"HF_TOKEN": "hf_x", "OPENAI_API_KEY": "sk"})
    assert "HF_TOKEN=hf_x" in r.stdout and "OPENAI_API_KEY" not in r.stdout


def test_env_helpers() -> None:
    for name in ["OPENAI_API_KEY", "HF_TOKEN", "DB_PASSWORD", "aws_secret", "HTTPS_PROXY"]:
        assert looks_secret(name), name
    for name in ["PATH", "LANG", "MY_SETTING", "NUM_THREADS"]:
        assert not looks_secret(name), name
    env, refused = sandbox_env(Path("/w"), {"A": "1", "API_KEY": "k"}, path_prefix=["/venv/bin"])
    assert env["HOME"] == "/w" and env["A"] == "1" and refused == ["API_KEY"]
    assert env["PATH"].startswith("/venv/bin:")


def test_command_not_found_is_a_result(ws: Path) -> None:
    r = run(["no-such-program-xyz"], workspace=ws)
    assert r.exit_code == 127 and "cannot start no-such-program-xyz" in r.stderr


def test_caller_errors_are_one_line(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="not an existing folder"):
        run(["true"], workspace=tmp_path / "missing")
    with pytest.raises(SandboxError, match="too broad"):
        run(["true"], workspace="/")
    with pytest.raises(SandboxError, match="unknown isolation level"):
        run(["true"], workspace=ws, isolation="docker")
    with pytest.raises(SandboxError, match="empty"):
        run([], workspace=ws)


def test_isolation_from_settings(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_SANDBOX__ISOLATION", "process")
    # pytest's 0700 tmp folder is out of reach of the level's own uid: run as root, loudly.
    monkeypatch.setenv("OMNILAB_SANDBOX__UNSAFE_PROCESS_AS_ROOT", "1")
    get_settings.cache_clear()
    r = run(["true"], workspace=ws)
    assert r.isolation is IsolationLevel.PROCESS and r.network
    assert any("outside its workspace" in w for w in r.warnings)
    if os.geteuid() == 0:
        assert any(w.startswith("UNSAFE: this code ran as root") for w in r.warnings)


def test_unavailable_level_is_refused_not_downgraded(ws: Path) -> None:
    report = isolation_report()
    if "bwrap" not in report.unavailable:
        pytest.skip("bubblewrap works here")
    with pytest.raises(SandboxError, match="'bwrap' is not available"):
        run(["true"], workspace=ws, isolation="bwrap")


def test_report_is_honest() -> None:
    report = isolation_report()
    assert report.level is isolation_level()
    assert report.blocked and report.level.value in report.summary()
    if report.level is IsolationLevel.PROCESS:
        assert any("network" in gap for gap in report.not_blocked)
    else:
        assert any("network" in item for item in report.blocked)
    assert report.own_uid == (os.geteuid() == 0)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_bwrap_level(ws: Path) -> None:
    r = run(["bash", "-c", "ls /root; touch /usr/x 2>&1; cat /proc/1/cmdline"], workspace=ws,
            isolation="bwrap")  # fmt: skip
    assert r.isolation is IsolationLevel.BWRAP and not r.network
    assert "Read-only file system" in r.stdout
    assert "bwrap" in r.stdout  # pid 1 is bubblewrap's init: an own pid namespace


def test_namespaces_view(ws: Path, available: Available) -> None:
    level = available("namespaces")
    r = run(["bash", "-c", "ls -A /root /run; echo pid1=$(cat /proc/1/comm); ls /proc | wc -l"],
            workspace=ws, isolation=level)  # fmt: skip
    assert "pid1=python" in r.stdout  # the launcher is init of an own pid namespace
    assert ".npmrc" not in r.stdout and ".bashrc" not in r.stdout  # homes are empty
    assert r.isolation is level


def test_head_tail_buffer() -> None:
    buf = HeadTail(10)
    for chunk in [b"abc", b"defgh", b"ijklmnop", b"qrstuvwxyz"]:
        buf.write(chunk)
    assert buf.total == 26
    assert buf.text() == "abcde\n[... 16 bytes cut ...]\nvwxyz"
    small = HeadTail(10)
    small.write(b"0123456789")
    assert small.text() == "0123456789"


def test_result_properties() -> None:
    r = ExecResult(exit_code=0, stdout="ab", stderr="", stdout_bytes=5, isolation="process")
    assert r.ok and r.truncated


def test_limits_from_settings(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_SANDBOX__LIMITS__WALL_SECONDS", "0.5")
    monkeypatch.setenv("OMNILAB_SANDBOX__LIMITS__OUTPUT_BYTES", "300")
    get_settings.cache_clear()
    r = run(["bash", "-c", "head -c 1000 /dev/zero | tr '\\0' a; sleep 30"], workspace=ws)
    assert r.timed_out and r.duration_s < 3
    assert r.stdout_bytes == 1000 and "[... 700 bytes cut ...]" in r.stdout
