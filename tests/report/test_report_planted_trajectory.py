"""Issue 42's reviewer on reproductions 5 and 17 for the static report: ``omnilab report RUN`` (and
``omnilab view``) read a run folder that may be another user's. A trajectory there that is a
link to root's own private trajectory (0600) was read through the link and rendered into the
report's pages (0644, by default inside that user's run folder); one that is a FIFO blocked the
command forever."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from omnilab.bench.errors import BenchError
from omnilab.report import build_report
from omnilab.report.synthetic import write_synthetic_run

SECRET = "ROOTS-OWN-PRIVATE-CONVERSATION-7f3a"


def _run(tmp_path: Path, name: str) -> Path:
    return write_synthetic_run(tmp_path / name, tasks=2)


def _pages(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in out.rglob("*.html"))


def test_a_trajectory_linked_to_roots_own_is_not_rendered(tmp_path: Path) -> None:
    private = _run(tmp_path, "roots-private-run")
    theirs = _run(tmp_path, "planted-run")
    (trajectory,) = sorted((theirs / "trajectories").glob("*.jsonl"))[:1]
    source = private / "trajectories" / trajectory.name
    source.write_text(source.read_text().replace("What colour", f"{SECRET} What colour"))
    source.chmod(0o600)
    trajectory.unlink()
    trajectory.symlink_to(source)
    out = tmp_path / "report"
    build_report([theirs], out)
    assert SECRET in source.read_text()
    assert SECRET not in _pages(out)


def test_a_fifo_trajectory_does_not_block_the_report(tmp_path: Path) -> None:
    theirs = _run(tmp_path, "planted-run")
    (trajectory,) = sorted((theirs / "trajectories").glob("*.jsonl"))[:1]
    trajectory.unlink()
    os.mkfifo(trajectory)
    done = threading.Event()
    errors: list[BaseException] = []

    def build() -> None:
        try:
            build_report([theirs], tmp_path / "report")
        except BaseException as e:
            errors.append(e)
        done.set()

    threading.Thread(target=build, daemon=True).start()
    blocked = not done.wait(20)
    if blocked:  # unblock the thread so the test process can end
        with open(trajectory, "wb"):  # noqa: PTH123
            pass
    assert not blocked, "the report waited on a FIFO planted as a trajectory"
    assert not errors, errors


@pytest.mark.parametrize("name", ["results.jsonl", "run.json"])
def test_a_linked_results_or_config_file_is_not_read(tmp_path: Path, name: str) -> None:
    private = _run(tmp_path, "roots-private-run")
    theirs = _run(tmp_path, "planted-run")
    source = private / name
    source.write_text(source.read_text().replace("task-0000", f"task-0000-{SECRET}"))
    source.chmod(0o600)
    (theirs / name).unlink()
    (theirs / name).symlink_to(source)
    out = tmp_path / "report"
    with contextlib.suppress(BenchError):
        build_report([theirs], out)
    assert SECRET not in (_pages(out) if out.is_dir() else "")


def test_a_fifo_results_file_does_not_block_the_report(tmp_path: Path) -> None:
    theirs = _run(tmp_path, "planted-run")
    (theirs / "results.jsonl").unlink()
    os.mkfifo(theirs / "results.jsonl")
    done = threading.Event()

    def build() -> None:
        with contextlib.suppress(BenchError):
            build_report([theirs], tmp_path / "report")
        done.set()

    threading.Thread(target=build, daemon=True).start()
    blocked = not done.wait(20)
    if blocked:
        with open(theirs / "results.jsonl", "wb"):  # noqa: PTH123 - unblock the reader
            pass
    assert not blocked, "the report waited on a FIFO planted as results.jsonl"
