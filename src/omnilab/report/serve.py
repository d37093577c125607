"""The reports behind ``omnilab report --serve RUNS_DIR`` (served by :mod:`omnilab.server.reports`).

Each run's report is built into a private folder when first asked for, and built again when its
``results.jsonl`` has changed since (a run still in progress: reload the page to see the tasks
finished since). The runs folder may be one that other users can write (a shared runs folder),
and the server may run as root, so a run folder is read by the no-follow rules of
:mod:`omnilab._wsread`: only real folders (not links) are runs, and the files a report is built
from are first copied, each opened beneath the runs folder without following a link on any
component and only when regular, into a private snapshot the builder reads; the runs folder is
marked untrusted, so media a trajectory names under it are read by the same rules.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path

from omnilab import _wsread, _wswalk
from omnilab.bench.errors import BenchError
from omnilab.report.build import write_run_report
from omnilab.report.html import esc, page, write_assets
from omnilab.sandbox import remove_tree

__all__ = ["ReportServer"]

_FILES = ("run.json", "results.jsonl", "analysis.json", "metrics.json")
_FOLDERS = ("trajectories", "workspaces", "scores")
_RESULTS = "results.jsonl"


class ReportServer:
    """Builds and rebuilds the reports of the runs under ``runs`` into ``out`` (a private
    folder: ``out/.sources`` holds the snapshots)."""

    def __init__(self, runs: Path, out: Path) -> None:
        if not runs.is_dir():
            raise BenchError(f"{runs} is not a folder; give the folder that holds run folders")
        self.runs = runs.absolute()
        self.out = out
        self.sources = out / ".sources"
        self._built: dict[str, tuple[int, int, int]] = {}
        self._lock = threading.Lock()
        _wsread.mark_untrusted(self.runs)

    def run_names(self) -> list[str]:
        """Sub-folders (real ones, not links) holding a run's results (a regular file)."""
        with _wsread.open_dir(self.runs) as fd:
            entries = _wswalk.list_folder(fd)
        return [
            name
            for name, st in entries
            if stat.S_ISDIR(st.st_mode)
            and not name.startswith(".")
            and _wsread.regular_file(f"{name}/{_RESULTS}", root=self.runs)
        ]

    def refresh(self, name: str) -> None:
        """Build the report of run ``name`` unless it is up to date."""
        fd, st = _wsread.open_file(f"{name}/{_RESULTS}", root=self.runs)
        os.close(fd)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:  # one build at a time; a second request waits for it
            if self._built.get(name) != stamp:
                source = self._snapshot(name)
                write_run_report(source, self.out / name, label=name)
                self._built[name] = stamp

    def _snapshot(self, name: str) -> Path:
        """The files a report reads, copied from ``runs/name`` by the no-follow rules."""
        target = self.sources / name
        remove_tree(target)
        target.mkdir(parents=True, mode=0o700)
        for file in _FILES:
            _copy(self.runs, f"{name}/{file}", target / file)
        for folder in _FOLDERS:
            with contextlib.suppress(OSError), _wsread.open_dir(self.runs, (name, folder)) as fd:
                for found in _wswalk.walk(fd):
                    here = target.joinpath(folder, *found.parts)
                    here.mkdir(parents=True, exist_ok=True)
                    for entry, st in found.entries:
                        rel = "/".join((name, folder, *found.parts, entry))
                        if stat.S_ISREG(st.st_mode):
                            _copy(self.runs, rel, here / entry)
        return target

    def write_root(self) -> None:
        """The root page: one link per run."""
        write_assets(self.out)
        items = "".join(
            f'<li><a href="{esc(n)}/index.html">{esc(n)}</a></li>' for n in self.run_names()
        )
        body = f"<h1>Runs in {esc(self.runs.name)}</h1><ul>{items or '<li>none yet</li>'}</ul>"
        (self.out / "index.html").write_text(page("Runs", body), encoding="utf-8")


def _copy(root: Path, rel: str, target: Path) -> None:
    """``root/rel`` into ``target`` when it is a regular file reached without a link; else
    nothing (a missing file, a link, a FIFO: left out)."""
    try:
        with target.open("xb") as out:
            _wsread.copy_to(rel, out, root=root)
    except OSError:
        target.unlink(missing_ok=True)
