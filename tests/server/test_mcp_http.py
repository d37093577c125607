"""``omnilab mcp --http``: a bearer token by default, and omnilab serve's Host/Origin checks.

Without them any process or user on the host, or a web page through DNS rebinding, could list
and read the served folder and run code with ``code_executor``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib import error, request

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.media import synth

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, object] | str]:
    """POST the initialize request; (status, JSON detail or body text)."""
    req = request.Request(url, data=json.dumps(INIT).encode(), headers=headers, method="POST")
    try:
        with request.urlopen(req, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except error.HTTPError as e:
        return e.code, json.loads(e.read().decode())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "served"
    root.mkdir()
    synth.make_image(root / "photo.png", size=(64, 48), index=3)
    return root


def _start(
    folder: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int, str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "omnilab", "mcp", str(folder), "--http", str(port), *extra],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    said = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    if proc.poll() is not None:
        said = proc.stderr.read() if proc.stderr else ""
        pytest.fail(f"omnilab mcp --http exited: {said}")
    return proc, port, said


@pytest.fixture()
def served(folder: Path) -> Iterator[tuple[int, str]]:
    token = "t" * 20 + "-served-token"
    proc, port, _ = _start(folder, "--token-env", "MCP_TEST_TOKEN", env={"MCP_TEST_TOKEN": token})
    try:
        yield port, token
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_requests_need_the_token_and_a_loopback_host(served: tuple[int, str]) -> None:
    port, token = served
    url = f"http://127.0.0.1:{port}/mcp"
    status, said = _post(url, HEADERS)
    assert status == 401 and "bearer token" in str(said)
    status, _ = _post(url, {**HEADERS, "authorization": "Bearer nope"})
    assert status == 401
    auth = {**HEADERS, "authorization": f"Bearer {token}"}
    status, said = _post(url, {**auth, "host": f"evil.example:{port}"})
    assert status == 403 and "Host" in str(said) and "--allow-host" not in str(said)
    status, _ = _post(url, {**auth, "origin": "http://evil.example"})
    assert status == 403
    status, said = _post(url, auth)
    assert status == 200, said


@pytest.mark.slow
def test_an_mcp_client_with_the_token_uses_the_tools(served: tuple[int, str]) -> None:
    port, token = served

    async def session() -> list[str]:
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:
            transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            async with Client(transport) as client:
                listed = await client.list_tools()
                shot = await client.call_tool("read_image", {"image_ids": ["photo.png"]})
                assert any(isinstance(b, types.ImageContent) for b in shot.content)
                return sorted(t.name for t in listed.tools)

    assert "read_image" in asyncio.run(session())


@pytest.mark.slow
def test_a_generated_token_is_shown_once_with_a_client_config(folder: Path) -> None:
    proc, _port, _ = _start(folder)
    try:
        lines = []
        assert proc.stderr is not None
        while len(lines) < 3:
            lines.append(proc.stderr.readline())
        text = "".join(lines)
        token = re.search(r"token \(shown once\): (\S+)", text)
        assert token, text
        config = json.loads(text.split("client config: ", 1)[1].splitlines()[0])
        assert config["headers"]["Authorization"] == f"Bearer {token.group(1)}"
        status, said = _post(config["url"], {**HEADERS, **config["headers"]})
        assert status == 200, said
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serving_without_a_token_takes_two_flags(folder: Path) -> None:
    runner = CliRunner()
    once = runner.invoke(app, ["mcp", str(folder), "--http", "1", "--no-token"])
    assert once.exit_code != 0
    assert "--i-understand-anyone-on-this-host-can-run-code" in once.output + str(once.exception)
    stdio = runner.invoke(app, ["mcp", str(folder), "--token-env", "X"])
    assert stdio.exit_code != 0 and "--http only" in stdio.output + str(stdio.exception)
