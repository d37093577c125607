"""``omnilab serve`` as a user starts it (a real process): a token is made, printed once (for the
browser's login page) and kept in a 0600 header file that the printed curl line reads (never the
token in a command line: other users read every process's argv), and then required; ``--no-token`` only with the explicit flag, and then with a
warning; a token from ``--token-env`` must be long; ``--allow-model`` is what clients may pick."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2 as httpx
import pytest

TOKEN_LINE = "token (shown once): "


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "OMNILAB_AGENTS__RUNS_DIR": str(tmp_path / "runs"),
        "OMNILAB_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **extra,
    }


@contextmanager
def running(tmp_path: Path, *args: str, **env: str) -> Iterator[tuple[str, list[str]]]:
    """``omnilab serve ARGS`` on a free port until its health answers; its stderr lines so far."""
    port = _free_port()
    log = tmp_path / f"serve-{port}.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "omnilab", "serve", "--port", str(port), *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=_env(tmp_path, **env),
            cwd=tmp_path,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "omnilab serve did not start"
            time.sleep(0.2)
        yield url, log.read_text().splitlines()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_token_is_made_printed_once_and_required(tmp_path: Path) -> None:
    script = tmp_path / "hello.json"
    script.write_text(json.dumps(["<answer>hello</answer>"]))
    other = tmp_path / "other.json"
    other.write_text(json.dumps(["<answer>other</answer>"]))
    with running(
        tmp_path,
        "--model",
        f"scripted:{script}",
        "--allow-model",
        f"scripted:{other}",
        OPENAI_API_KEY="sk-must-never-show-0123456789",
    ) as (url, lines):
        (shown,) = [line for line in lines if line.startswith(TOKEN_LINE)]
        token = shown.removeprefix(TOKEN_LINE)
        assert len(token) >= 32
        curl = next(line for line in lines if "curl " in line)
        header = tmp_path / "state" / "omnilab" / "tokens" / f"serve-{url.rsplit(':', 1)[1]}.header"
        assert f"curl -H @{header} " in curl and f"{url}/v1/ask" in curl
        assert header.read_text() == f"Authorization: Bearer {token}\n"
        assert header.stat().st_mode & 0o777 == 0o600
        assert header.parent.stat().st_mode & 0o777 == 0o700
        assert sum(token in line for line in lines) == 1  # the token line only: no argv, no URL
        browser = next(line for line in lines if "in a browser" in line)
        assert browser.endswith(f"{url}/login (paste the token)")
        assert not any("sk-must-never-show" in line for line in lines)

        assert httpx.post(f"{url}/v1/ask", data={"question": "hi"}).status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        reply = httpx.post(f"{url}/v1/ask", data={"question": "hi"}, headers=auth, timeout=60)
        assert reply.status_code == 200 and reply.json()["answer"] == "hello", reply.text
        chosen = {"question": "hi", "model": f"scripted:{other}"}
        reply = httpx.post(f"{url}/v1/ask", data=chosen, headers=auth, timeout=60)
        assert reply.json()["answer"] == "other"
        refused = {"question": "hi", "model": f"scripted:{tmp_path / 'x.json'}"}
        reply = httpx.post(f"{url}/v1/ask", data=refused, headers=auth)
        assert reply.status_code == 400 and "--allow-model" in reply.json()["detail"]
    assert not header.exists()  # removed when the server stops


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--no-token"], {}, "add --i-understand-anyone-on-this-host-can-run-code"),
        (["--token-env", "SERVE_TOKEN"], {}, "--token-env SERVE_TOKEN: that variable is not set"),
        (["--token-env", "SERVE_TOKEN"], {"SERVE_TOKEN": "short"}, "shorter than 16 characters"),
        (
            ["--no-token", "--token-env", "SERVE_TOKEN"],
            {"SERVE_TOKEN": "x" * 20},
            "--no-token and --token-env contradict each other",
        ),
    ],
)
def test_unsafe_or_bad_token_choices_stop_with_one_line(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "serve", "--port", str(_free_port()), *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_no_token_takes_the_explicit_flag_and_warns(tmp_path: Path) -> None:
    flag = "--i-understand-anyone-on-this-host-can-run-code"
    with running(tmp_path, "--no-token", flag) as (url, lines):
        assert any("warning: serving WITHOUT a token" in line for line in lines)
        assert not any(line.startswith(TOKEN_LINE) for line in lines)
        assert httpx.get(f"{url}/v1/runs").status_code == 200
        # The Host and Origin checks still hold without a token.
        evil = {"Origin": "http://attacker.example"}
        assert httpx.post(f"{url}/v1/ask", data={"question": "q"}, headers=evil).status_code == 403


def test_a_token_from_the_environment_is_used_and_not_printed(tmp_path: Path) -> None:
    token = "env-token-0123456789abcdef"
    with running(tmp_path, "--token-env", "SERVE_TOKEN", SERVE_TOKEN=token) as (url, lines):
        assert not any(token in line for line in lines)
        assert httpx.get(f"{url}/v1/runs").status_code == 401
        ok = httpx.get(f"{url}/v1/runs", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
