"""``omnilab report --serve``: reports of a folder of runs on 127.0.0.1, rebuilt when a run in
progress has written more results, behind omnilab serve's guard (issue 42, reproduction 17: a
token, loopback Host names only, no cross-site requests) and reading run folders without
following links (a run folder another user planted cannot lead the root server to root-only
files)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest
import uvicorn

from omnilab.bench.results import write_results
from omnilab.bench.run_dir import RunDir
from omnilab.report.serve import ReportServer
from omnilab.server.reports import report_app

TOKEN = "report-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Live:
    def __init__(self, app: object) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off")  # type: ignore[arg-type]
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


def test_serve_lists_runs_and_refreshes_a_run_in_progress(run_a: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = runs / "live"
    shutil.copytree(run_a, run)
    results = RunDir(run).results()
    write_results(RunDir(run).results_file, results[:5])  # 5 tasks done so far
    reports = ReportServer(runs, tmp_path / "out")
    with Live(report_app(reports, token=TOKEN)) as url, httpx.Client(headers=AUTH) as http:

        def get(path: str, **headers: str) -> str:
            reply = http.get(url + path, headers=headers)
            assert reply.status_code == 200, (path, reply.status_code)
            return reply.text

        assert 'href="live/index.html"' in get("")
        assert get("live/index.html").count("<tr data-state=") == 5
        write_results(RunDir(run).results_file, results[:9])  # the run went on
        assert get("live/index.html").count("<tr data-state=") == 9
        assert "read_video" in get("live/tasks/task-0001.html")
        assert "setupFilterable" in get("live/assets/report.js")
        port = url.split(":")[2].rstrip("/")
        assert "read_video" in get("live/tasks/task-0001.html", host=f"localhost:{port}")
        # DNS rebinding: a page on another domain that now resolves to 127.0.0.1.
        for host in (f"attacker.example:{port}", "attacker.example"):
            for method in ("GET", "HEAD"):
                reply = http.request(method, url + "live/index.html", headers={"Host": host})
                assert reply.status_code == 403
        evil = http.get(url + "live/index.html", headers={"Origin": "http://attacker.example"})
        assert evil.status_code == 403
        # A file under media/ opened on its own runs sandboxed, whatever its type.
        media = next((tmp_path / "out" / "live" / "media").iterdir()).name
        reply = http.get(url + f"live/media/{media}")
        assert reply.headers["Content-Security-Policy"] == "sandbox"
        assert reply.headers["X-Content-Type-Options"] == "nosniff"


def test_no_token_no_report_and_the_browser_signs_in(run_a: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(run_a, runs / "mine")
    reports = ReportServer(runs, tmp_path / "out")
    with Live(report_app(reports, token=TOKEN)) as url:
        for path in ("", "mine/index.html", "mine/tasks/task-0001.html"):
            assert httpx.get(url + path).status_code == 401
        assert httpx.get(url + "?token=nope").status_code == 401
        with httpx.Client(base_url=url) as browser:
            assert "Sign in" in browser.get("/login").text
            signed = browser.post("/login", data={"token": TOKEN}, follow_redirects=False)
            assert signed.status_code == 303 and signed.headers["location"] == "/"
            assert 'href="mine/index.html"' in browser.get("/").text


def test_a_planted_run_folder_leads_to_no_file_outside(tmp_path: Path, run_a: Path) -> None:
    """Another user's run folder: a link as the run, links as its results and trajectories."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shutil.copytree(run_a, private / "rootrun")
    secret = private / "rootrun" / "results.jsonl"
    runs = tmp_path / "shared-runs"
    runs.mkdir()
    (runs / "linked").symlink_to(private / "rootrun")  # a link as a run folder
    planted = runs / "planted"
    planted.mkdir()
    (planted / "results.jsonl").symlink_to(secret)  # a link as its results
    shutil.copytree(run_a, runs / "half")
    shutil.rmtree(runs / "half" / "trajectories")
    (runs / "half" / "trajectories").symlink_to(private / "rootrun" / "trajectories")
    os.mkfifo(runs / "fifo-run")
    reports = ReportServer(runs, tmp_path / "out")
    assert reports.run_names() == ["half"]
    with Live(report_app(reports, token=TOKEN)) as url, httpx.Client(headers=AUTH) as http:
        listing = http.get(url).text
        assert "linked" not in listing and "planted" not in listing
        assert http.get(url + "half/index.html").status_code == 200
        assert (tmp_path / "out" / ".sources" / "half" / "results.jsonl").is_file()
        for path in (
            "linked/index.html",
            "planted/index.html",
            "%2e%2e/private/rootrun/run.json",
            ".sources/half/results.jsonl",
        ):
            assert http.get(url + path).status_code == 404, path
        assert http.get(url + "half/index.html").status_code == 200
        page = http.get(url + "half/tasks/task-0001.html")
        # Its trajectories were a link: not followed, so no task page shows steps from them.
        assert page.status_code == 404 or "read_video" not in page.text
    assert not any((tmp_path / "out" / ".sources" / "half").glob("trajectories/*"))


@pytest.mark.slow
def test_the_command_prints_no_token_in_a_command_line_or_address(
    run_a: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(run_a, runs / "r")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    with socket_port() as port:
        pass
    proc = subprocess.Popen(
        [sys.executable, "-m", "omnilab", "report", "--serve", str(runs), "--port", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline() for _ in range(5)]
        token = lines[1].split("token (shown once): ", 1)[1].strip()
        assert sum(token in line for line in lines) == 1
        assert any(f"http://127.0.0.1:{port}/login" in line for line in lines)
        header = tmp_path / "state" / "omnilab" / "tokens" / f"report-{port}.header"
        assert any(f"curl -H @{header}" in line for line in lines)
        assert header.stat().st_mode & 0o777 == 0o600
        deadline = time.monotonic() + 30
        while True:
            try:
                reply = httpx.get(
                    f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {token}"}
                )
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert reply.status_code == 200 and 'href="r/index.html"' in reply.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert not header.exists()


class socket_port:  # noqa: N801 - a tiny context manager
    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        port: int = self.sock.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
