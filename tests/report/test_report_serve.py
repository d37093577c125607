"""``omnilab report --serve``: reports of a folder of runs on 127.0.0.1, rebuilt when a run in
progress has written more results."""

from __future__ import annotations

import shutil
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from omnilab.bench.results import write_results
from omnilab.bench.run_dir import RunDir
from omnilab.report.serve import serve_runs


def get(url: str, *, host: str | None = None) -> str:
    # No proxy: a proxy set in the environment must not see loopback requests.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    with opener.open(request, timeout=30) as reply:
        text: str = reply.read().decode("utf-8")
        return text


def test_serve_lists_runs_and_refreshes_a_run_in_progress(run_a: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = runs / "live"
    shutil.copytree(run_a, run)
    results = RunDir(run).results()
    write_results(RunDir(run).results_file, results[:5])  # 5 tasks done so far
    started: dict[str, Any] = {}
    ready = threading.Event()

    def on_ready(url: str, server: Any) -> None:
        started.update(url=url, server=server)
        ready.set()

    thread = threading.Thread(
        target=serve_runs, args=(runs,), kwargs={"port": 0, "ready": on_ready}, daemon=True
    )
    thread.start()
    assert ready.wait(30)
    url = started["url"]
    try:
        assert url.startswith("http://127.0.0.1:")
        assert 'href="live/index.html"' in get(url)
        assert get(url + "live/index.html").count("<tr data-state=") == 5
        write_results(RunDir(run).results_file, results[:9])  # the run went on
        assert get(url + "live/index.html").count("<tr data-state=") == 9
        assert "read_video" in get(url + "live/tasks/task-0001.html")
        assert "setupFilterable" in get(url + "live/assets/report.js")
        port = url.split(":")[2].rstrip("/")
        assert "read_video" in get(url + "live/tasks/task-0001.html", host=f"localhost:{port}")
        # DNS rebinding: a page on another domain that now resolves to 127.0.0.1.
        for host in (f"attacker.example:{port}", "attacker.example"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                get(url + "live/tasks/task-0001.html", host=host)
            assert refused.value.code == 403
            head = urllib.request.Request(url + "live/index.html", method="HEAD")
            head.add_header("Host", host)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.build_opener(urllib.request.ProxyHandler({})).open(head, timeout=30)
            assert refused.value.code == 403
        # A file under media/ opened on its own runs sandboxed, whatever its type.
        with pytest.raises(urllib.error.HTTPError) as missing:
            get(url + "live/media/page.html")
        assert missing.value.headers["Content-Security-Policy"] == "sandbox"
        assert missing.value.headers["X-Content-Type-Options"] == "nosniff"
    finally:
        started["server"].shutdown()
        thread.join(30)
    assert not thread.is_alive()
