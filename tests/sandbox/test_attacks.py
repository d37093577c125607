"""Each attack from the issue, at each isolation level this machine offers; the harness (this
process) must come out of all of them unharmed, and each result must name its level."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from omnilab.config import SandboxLimits
from omnilab.sandbox import IsolationLevel, run

SLEEP = "import time; time.sleep(300)"
levels = pytest.mark.parametrize("level", ["bwrap", "namespaces", "process"])
Available = Callable[[str], IsolationLevel]
Strong = Callable[[str, str], IsolationLevel]
Scan = Callable[[str], list[int]]


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


@levels
def test_infinite_loop_stopped_by_cpu_limit(ws: Path, level: str, available: Available) -> None:
    lvl = available(level)
    limits = SandboxLimits(cpu_seconds=1, wall_seconds=20)
    r = run(py("while True: pass"), workspace=ws, limits=limits, isolation=lvl)
    assert r.killed == "cpu limit" and r.signal == "SIGXCPU"
    assert r.exit_code is None and not r.timed_out
    # rusage lags the kernel's CPU-limit clock a little on a loaded machine
    assert r.duration_s < 5 and r.cpu_s is not None and r.cpu_s >= 0.5
    assert r.isolation is lvl


@levels
def test_sleeping_forever_stopped_by_wall_clock(ws: Path, level: str, available: Available) -> None:
    lvl = available(level)
    limits = SandboxLimits(wall_seconds=1)
    t0 = time.monotonic()
    r = run(
        py("import time; print('start', flush=True); time.sleep(600)"),
        workspace=ws,
        limits=limits,
        isolation=lvl,
    )
    assert r.timed_out and r.killed == "wall-clock timeout" and r.exit_code is None
    assert r.stdout == "start\n"  # output before the kill is kept
    assert time.monotonic() - t0 < 4
    assert r.isolation is lvl


@levels
def test_allocating_10_gb_fails_inside(
    ws: Path, level: str, limits: SandboxLimits, available: Available
) -> None:
    lvl = available(level)
    r = run(
        py("b = bytearray(10 * 1024**3); print('allocated')"),
        workspace=ws,
        limits=limits,
        isolation=lvl,
    )
    assert "MemoryError" in r.stderr and "allocated" not in r.stdout
    assert r.exit_code == 1 and r.killed == "memory limit"
    assert r.isolation is lvl


@levels
def test_growing_memory_stops_at_the_limit(
    ws: Path, level: str, limits: SandboxLimits, available: Available
) -> None:
    lvl = available(level)
    code = """
        chunks = []
        try:
            while True:
                chunks.append(bytearray(64 * 1024**2))
        except MemoryError:
            print("got", len(chunks) * 64, "MiB")
    """
    limits = limits.model_copy(update={"memory_bytes": 256 * 1024**2})
    r = run(py(code), workspace=ws, limits=limits, isolation=lvl)
    got = int(r.stdout.split()[1])
    assert r.ok and 0 < got <= 256  # stopped at the 256 MiB address-space limit


@pytest.mark.parametrize("level", ["bwrap", "namespaces"])
def test_fork_bomb_contained(
    ws: Path,
    level: str,
    limits: SandboxLimits,
    token: str,
    available: Available,
    processes_with: Scan,
) -> None:
    # Only where RLIMIT_NPROC is real (own uid): at the process level a fork bomb would be
    # bounded by nothing but the wall clock, and this test must never load the machine.
    lvl = available(level)
    if os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC is per-sandbox only when the harness is root (own uid)")
    code = f"""
        import os, time  # {token}
        forked = 0
        for _ in range(10_000):
            try:
                if os.fork() == 0:
                    while True:  # every child is a bomb too
                        try:
                            os.fork()
                        except OSError:
                            time.sleep(0.05)
                forked += 1
            except OSError:
                break
        print("forked", forked, flush=True)
        time.sleep(600)
    """
    limits = limits.model_copy(update={"wall_seconds": 2})
    r = run(py(code), workspace=ws, limits=limits, isolation=lvl)
    forked = int(r.stdout.split()[1])
    assert forked < limits.max_processes  # the bomb hit RLIMIT_NPROC, not the machine
    assert r.timed_out and r.isolation is lvl
    assert processes_with(token) == []


@levels
def test_setsid_grandchild_is_killed_at_the_end(
    ws: Path, level: str, token: str, available: Available, processes_with: Scan
) -> None:
    lvl = available(level)
    code = f"""
        import os, sys, time
        if os.fork() == 0:          # daemonize: fork, setsid, fork again, parent exits
            os.setsid()
            if os.fork() == 0:
                open("daemon-alive", "w").close()
                token = "{token[:8]}" + "{token[8:]}"  # only the daemon's command line has it whole
                os.execv(sys.executable, [sys.executable, "-c", {SLEEP!r}, token])
            os._exit(0)
        while not os.path.exists("daemon-alive"):
            time.sleep(0.01)
        time.sleep(0.2)
        print("main exits")
    """
    r = run(py(code), workspace=ws, isolation=lvl)
    assert r.ok and r.stdout == "main exits\n" and r.isolation is lvl
    assert (ws / "daemon-alive").exists()  # the daemon really ran
    assert processes_with(token) == []


@levels
def test_setsid_grandchild_is_killed_at_timeout(
    ws: Path, level: str, token: str, available: Available, processes_with: Scan
) -> None:
    lvl = available(level)
    code = f"""
        import subprocess, sys, time
        token = "{token[:8]}" + "{token[8:]}"  # only the grandchild's command line has it whole
        subprocess.Popen([sys.executable, "-c", {SLEEP!r}, token], start_new_session=True)
        print("started", flush=True)
        time.sleep(300)
    """
    seen: list[int] = []
    limits = SandboxLimits(wall_seconds=1.5)
    watcher = threading.Timer(1.0, lambda: seen.extend(processes_with(token)))
    watcher.start()
    r = run(py(code), workspace=ws, limits=limits, isolation=lvl)
    watcher.join()
    assert r.timed_out and r.stdout == "started\n"
    assert seen  # it was running before the timeout...
    assert processes_with(token) == []  # ...and is gone after


@levels
def test_writes_outside_the_workspace_fail(ws: Path, level: str, strong: Strong) -> None:
    lvl = strong(level, "writes outside the workspace")
    name = f"outside-{uuid.uuid4().hex}"
    targets = [Path("/tmp") / name, ws.parent / name, Path("/var/tmp") / name]
    code = f"""
        for path in {[str(t) for t in targets]!r} + ["../{name}-rel"]:
            try:
                open(path, "w").write("escaped")
                print("wrote", path)
            except OSError as exc:
                print("refused", path, type(exc).__name__)
        open("inside.txt", "w").write("fine")
    """
    try:
        r = run(py(code), workspace=ws, isolation=lvl)
        assert (ws / "inside.txt").read_text() == "fine"
        assert r.isolation is lvl
        for path in [*targets, ws.parent / f"{name}-rel"]:
            assert not path.exists(), f"the sandbox wrote {path}"
        # Relative escape and the real parent are refused outright, not just invisible.
        assert f"refused ../{name}-rel" in r.stdout
        assert f"refused {ws.parent / name}" in r.stdout
    finally:
        for path in [*targets, ws.parent / f"{name}-rel"]:
            path.unlink(missing_ok=True)


@levels
def test_reading_ssh_keys_fails(
    ws: Path, tmp_path: Path, level: str, monkeypatch: pytest.MonkeyPatch, strong: Strong
) -> None:
    lvl = strong(level, "reading the harness user's files")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY----- SECRET")
    key.chmod(0o600)
    monkeypatch.setenv("HOME", str(home))  # the harness's home, as Path.home() sees it
    code = f"""
        import os
        for path in [{str(key)!r}, os.path.expanduser("~/.ssh/id_ed25519"),
                     "/root/.ssh/id_rsa", "/root/.ssh/id_ed25519"]:
            try:
                print(open(path).read())
            except OSError as exc:
                print("refused", type(exc).__name__)
    """
    r = run(py(code), workspace=ws, isolation=lvl)
    assert "SECRET" not in r.stdout and r.stdout.count("refused") == 4
    assert r.isolation is lvl


@levels
def test_reading_root_only_files_fails(ws: Path, level: str, strong: Strong) -> None:
    if os.geteuid() != 0 or not Path("/etc/shadow").exists():
        pytest.skip("needs a root harness and /etc/shadow (root-only, never masked)")
    lvl = strong(level, "reading files only root may read")
    r = run(["cat", "/etc/shadow"], workspace=ws, isolation=lvl)
    assert r.exit_code == 1 and "Permission denied" in r.stderr and "root:" not in r.stdout


@pytest.fixture()
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records what each connection sends."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(5)
    received: list[bytes] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
            with conn:
                data = conn.recv(100)
                if data:  # the teardown's wake-up connection sends nothing
                    received.append(data)
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    yield port, received
    if thread.is_alive():  # nobody connected: wake accept() rather than wait for its timeout
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    thread.join(timeout=6)
    server.close()


CONNECT = """
    import socket
    try:
        s = socket.create_connection(("127.0.0.1", {port}), timeout=3)
        s.sendall(b"hello from the sandbox")
        s.close()
        print("connected")
    except OSError as exc:
        print("refused", exc)
"""


@levels
def test_socket_refused_without_network(
    ws: Path, level: str, listener: tuple[int, list[bytes]], strong: Strong
) -> None:
    lvl = strong(level, "the network")
    port, received = listener
    r = run(py(CONNECT.format(port=port)), workspace=ws, network=False, isolation=lvl)
    # unshare leaves the new namespace's loopback down (unreachable); bwrap brings it up, empty
    # (connection refused): either way nothing reaches the harness's listener.
    assert r.stdout.startswith("refused")
    assert r.network is False and r.isolation is lvl
    assert received == []


@levels
def test_socket_works_with_network(
    ws: Path, level: str, listener: tuple[int, list[bytes]], available: Available
) -> None:
    lvl = available(level)
    port, received = listener
    r = run(py(CONNECT.format(port=port)), workspace=ws, network=True, isolation=lvl)
    assert r.stdout == "connected\n" and r.network is True
    for _ in range(50):
        if received:
            break
        time.sleep(0.05)
    assert received == [b"hello from the sandbox"]


@levels
def test_printing_100_mb_is_truncated(
    ws: Path, level: str, limits: SandboxLimits, available: Available
) -> None:
    lvl = available(level)
    code = """
        import sys
        sys.stdout.write("BEGIN")
        for _ in range(100):
            sys.stdout.write("x" * 1_000_000)
        sys.stdout.write("END")
    """
    tracemalloc.start()
    try:
        t0 = time.monotonic()
        r = run(py(code), workspace=ws, limits=limits, isolation=lvl)
        elapsed = time.monotonic() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.ok and r.stdout_bytes == 100_000_008
    assert r.stdout.startswith("BEGINxxx") and r.stdout.endswith("xxxEND")
    assert f"[... {100_000_008 - 4000} bytes cut ...]" in r.stdout
    assert len(r.stdout) < 4100 and r.truncated
    assert peak < 8 * 1024**2, f"the harness held {peak} bytes"
    assert elapsed < 15


@levels
def test_file_size_limit(ws: Path, level: str, limits: SandboxLimits, available: Available) -> None:
    lvl = available(level)
    r = run(
        ["dd", "if=/dev/zero", "of=big", "bs=1M", "count=64"],
        workspace=ws,
        limits=limits,
        isolation=lvl,
    )
    assert r.killed == "file size limit" and r.signal == "SIGXFSZ"
    assert (ws / "big").stat().st_size <= limits.file_size_bytes


@levels
def test_sandbox_dies_with_a_killed_harness(
    ws: Path, level: str, token: str, available: Available, processes_with: Scan
) -> None:
    # A harness killed with SIGKILL runs no cleanup: the launcher's lifeline must end it all.
    lvl = available(level)
    harness = f"""
        import sys
        from omnilab.sandbox import run
        token = "{token[:8]}" + "{token[8:]}"  # split: this harness's own command line must not match
        run([sys.executable, "-c", {SLEEP!r}, token], workspace={str(ws)!r}, isolation={lvl.value!r})
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(harness)])
    try:
        assert processes_with(token, wait=10), "the sandboxed sleep never started"
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 3
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(token) == []


def test_harness_survived_everything(available: Available) -> None:
    # Runs after the attacks above (file order): this process is alive and can still sandbox.
    assert Path(f"/proc/{os.getpid()}").exists()
    assert isinstance(available("auto"), IsolationLevel)
