"""``code_executor`` over the sandbox: normal use, and each attack, contained, as a result.

Every attack goes through the tool as a model would send it; each must come back as a structured
:class:`ToolResult` (never an exception), and the harness (this process) and the session must
still work afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentkit import RunAgent, scripted

from omnilab.config import SandboxLimits
from omnilab.models.providers import scripted as s
from omnilab.sandbox import IsolationLevel, PythonSession, isolation_level, isolation_report
from omnilab.tools.base import Tool, ToolResult
from omnilab.tools.code import CODE_EXECUTOR_SCHEMA, code_executor_tool

LIMITS = SandboxLimits(
    cpu_seconds=3,
    memory_bytes=1024**3,
    file_size_bytes=16 * 1024**2,
    max_processes=32,
    wall_seconds=8,
    output_bytes=4000,
)


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture()
def executor(ws: Path) -> Iterator[Tool]:
    with PythonSession(ws, limits=LIMITS) as session:
        yield code_executor_tool(session)


def strong() -> None:
    """Skip where the sandbox runs at the process level, which does not block file or network
    access (the sandbox's own tests document that gap)."""
    if isolation_level() is IsolationLevel.PROCESS:
        pytest.skip("the process isolation level does not confine files or the network")


def call(tool: Tool, code: str) -> ToolResult:
    return asyncio.run(tool({"code": code}))


def body(result: ToolResult) -> dict[str, object]:
    data = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert isinstance(data, dict)
    return data


def survives(tool: Tool) -> None:
    """The harness is alive and the tool answers again (in a fresh interpreter if it had to)."""
    again = call(tool, "print('still here')")
    assert again.ok and body(again)["stdout"] == "still here"


def test_schema_is_the_authors_definition(executor: Tool) -> None:
    assert executor.spec.name == "code_executor"
    assert executor.spec.parameters == CODE_EXECUTOR_SCHEMA["parameters"]
    assert executor.spec.description.startswith("Execute Python code in a secure sandbox")


def test_state_persists_and_files_stay_in_the_workspace(executor: Tool, ws: Path) -> None:
    first = call(executor, "x = 40\nopen('out.txt', 'w').write('hi')")
    assert first.ok and body(first)["created_files"] == [{"path": "out.txt", "size": 2}]
    second = call(executor, "x + 2")
    assert body(second)["result"] == "42"
    assert (ws / "out.txt").read_text() == "hi"
    assert second.metadata["isolation"] == isolation_level().value
    # The totals this machine cannot enforce, as the isolation report lists them.
    assert second.metadata["missing_totals"] == isolation_report().missing_totals


def test_exceptions_come_back_as_output(executor: Tool) -> None:
    result = call(executor, "1 / 0")
    assert result.error is None  # the code failed, not the tool: the model reads the traceback
    assert "ZeroDivisionError" in str(body(result)["error"])


def test_attack_infinite_loop(executor: Tool) -> None:
    result = call(executor, "while True:\n    pass")
    assert result.error is not None and result.error.code in ("CODE_LIMIT", "TIMEOUT")
    assert result.metadata["killed"] is not None
    survives(executor)


def test_attack_allocating_10_gb(executor: Tool) -> None:
    result = call(executor, "b = bytearray(10 * 1024**3)")
    assert "MemoryError" in str(body(result)["error"]) or result.error is not None
    survives(executor)


def test_attack_fork_bomb(executor: Tool) -> None:
    if os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC is per-sandbox only when the harness is root (own uid)")
    code = (
        "import os, time\n"
        "n = 0\n"
        "for _ in range(10_000):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "    except OSError:\n"
        "        break\n"
        "print('forked', n)"
    )
    result = call(executor, code)
    forked = int(str(body(result)["stdout"]).split()[1])
    assert forked < LIMITS.max_processes  # stopped by the process limit, not by the machine
    survives(executor)


def test_attack_writes_outside_the_workspace(executor: Tool, ws: Path) -> None:
    strong()
    name = f"escape-{uuid.uuid4().hex}"
    targets = [Path("/tmp") / name, ws.parent / name, Path.home() / name]
    code = (
        f"for p in {[str(t) for t in targets]!r} + ['../{name}-rel']:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print('wrote', p)\n"
        "    except OSError as e:\n"
        "        print('refused', type(e).__name__)"
    )
    try:
        result = call(executor, code)
        # /tmp inside the sandbox is private: a write there may succeed, but never reaches ours.
        for path in [*targets, ws.parent / f"{name}-rel"]:
            assert not path.exists(), f"the code wrote {path}"
        assert "wrote ../" not in str(body(result)["stdout"])
    finally:
        for path in [*targets, ws.parent / f"{name}-rel"]:
            path.unlink(missing_ok=True)
    survives(executor)


def test_attack_reading_ssh_keys(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    strong()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY SECRET")
    monkeypatch.setenv("HOME", str(home))
    with PythonSession(ws, limits=LIMITS) as session:
        tool = code_executor_tool(session)
        code = (
            "import os\n"
            f"for p in [{str(home / '.ssh' / 'id_ed25519')!r}, "
            "os.path.expanduser('~/.ssh/id_ed25519'), '/root/.ssh/id_rsa']:\n"
            "    try:\n"
            "        print(open(p).read())\n"
            "    except OSError as e:\n"
            "        print('refused', type(e).__name__)"
        )
        result = call(tool, code)
        assert "SECRET" not in result.content[0].text  # type: ignore[union-attr]
        assert str(body(result)["stdout"]).count("refused") == 3
        survives(tool)


def test_attack_sockets(executor: Tool) -> None:
    strong()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(3)
    port = server.getsockname()[1]
    got: list[bytes] = []

    def accept() -> None:
        try:
            conn, _ = server.accept()
            with conn:
                got.append(conn.recv(100))
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    code = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')\n"
        "    print('connected')\n"
        "except OSError as e:\n"
        "    print('refused', e)"
    )
    try:
        result = call(executor, code)
        assert str(body(result)["stdout"]).startswith("refused")
        assert result.metadata["network"] is False
    finally:
        thread.join(timeout=5)
        server.close()
    assert got in ([], [b""])
    survives(executor)


def test_attack_printing_100_mb(executor: Tool) -> None:
    result = call(executor, "import sys\nsys.stdout.write('x' * (100 * 1024**2))")
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(text) < 20_000  # head and tail only, with a cut marker
    assert "cut" in str(body(result)["stdout"])
    survives(executor)


def test_an_attack_inside_a_full_run_is_recorded(
    run_agent: RunAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_SANDBOX__LIMITS__CPU_SECONDS", "2")
    monkeypatch.setenv("OMNILAB_SANDBOX__LIMITS__WALL_SECONDS", "6")
    from omnilab.config import get_settings

    get_settings.cache_clear()
    model, _ = scripted(
        [
            s.tool_call("code_executor", {"code": "while True: pass"}),
            s.text("<answer>stopped</answer>"),
        ]
    )
    run = run_agent(model, tools=["code_executor"])
    (result,) = run.saved.tool_results
    assert result.result.error is not None and result.result.error.code in ("CODE_LIMIT", "TIMEOUT")
    assert run.saved.status == "answered"
