"""``omnilab report --serve RUNS_DIR``: reports of every run in a folder, served on 127.0.0.1.

Each run's report is built into a temporary folder when first asked for, and built again when
its ``results.jsonl`` has changed since (a run still in progress: reload the page to see the
tasks finished since). The root page lists the runs. Only loopback is bound, and a request whose
``Host`` is not a loopback name is refused (403), so a web page whose domain was made to resolve
to 127.0.0.1 (DNS rebinding) cannot read the reports; files are served from the report folder
only (the standard handler refuses paths that leave it).
"""

from __future__ import annotations

import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from omnilab._hosts import LOOPBACK, host_name
from omnilab.bench.errors import BenchError
from omnilab.bench.run_dir import RunDir
from omnilab.report.build import write_run_report
from omnilab.report.html import esc, page, write_assets

__all__ = ["ReportServer", "serve_runs"]


class ReportServer:
    """Builds and rebuilds the reports of the runs under ``runs`` into ``out``."""

    def __init__(self, runs: Path, out: Path) -> None:
        if not runs.is_dir():
            raise BenchError(f"{runs} is not a folder; give the folder that holds run folders")
        self.runs = runs
        self.out = out
        self._built: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def run_names(self) -> list[str]:
        """Sub-folders holding a run's results."""
        return sorted(p.name for p in self.runs.iterdir() if RunDir(p).results_file.is_file())

    def refresh(self, name: str) -> None:
        """Build the report of run ``name`` unless it is up to date."""
        results = RunDir(self.runs / name).results_file
        stat = results.stat()
        stamp = (stat.st_size, stat.st_mtime_ns)
        with self._lock:  # one build at a time; a second request waits for it
            if self._built.get(name) != stamp:
                write_run_report(self.runs / name, self.out / name, label=name)
                self._built[name] = stamp

    def write_root(self) -> None:
        """The root page: one link per run."""
        write_assets(self.out)
        items = "".join(
            f'<li><a href="{esc(n)}/index.html">{esc(n)}</a></li>' for n in self.run_names()
        )
        body = f"<h1>Runs in {esc(self.runs.name)}</h1><ul>{items or '<li>none yet</li>'}</ul>"
        (self.out / "index.html").write_text(page("Runs", body), encoding="utf-8")


class _Handler(SimpleHTTPRequestHandler):
    server_reports: ReportServer

    def _foreign_host(self) -> bool:
        """Refuses (403) a request whose Host is not a loopback name; True if refused."""
        if host_name(self.headers.get("Host", "")) in LOOPBACK:
            return False
        self.send_error(403, "unknown Host: this report server answers only to loopback names")
        return True

    def do_HEAD(self) -> None:
        if not self._foreign_host():
            super().do_HEAD()

    def end_headers(self) -> None:
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        if "/media/" in urlsplit(self.path).path:
            # A copied input opened on its own (an HTML or SVG file) runs no script here.
            self.send_header("Content-Security-Policy", "sandbox")
        super().end_headers()

    def do_GET(self) -> None:
        if self._foreign_host():
            return
        path = unquote(urlsplit(self.path).path).lstrip("/")
        first = path.split("/", 1)[0]
        if path in ("", "index.html"):
            self.server_reports.write_root()
        elif first in self.server_reports.run_names() and path.endswith((".html", "/")):
            self.server_reports.refresh(first)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the command prints the address once."""


def serve_runs(runs: Path, *, port: int = 8765, out: Path | None = None, ready: Any = None) -> None:
    """Serve the reports of the runs under ``runs`` on ``127.0.0.1:port`` until interrupted;
    ``ready(url, server)`` is called once listening (the CLI prints the URL; tests stop it)."""
    with tempfile.TemporaryDirectory(prefix="omnilab-report-") as tmp:
        reports = ReportServer(runs, out or Path(tmp))
        reports.write_root()
        handler = type("Handler", (_Handler,), {"server_reports": reports})
        factory = partial(handler, directory=str(reports.out))
        with ThreadingHTTPServer(("127.0.0.1", port), factory) as server:
            host, bound = server.server_address[:2]
            if ready is not None:
                ready(f"http://{host!s}:{bound}/", server)
            server.serve_forever()
