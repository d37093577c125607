"""A lingering trajectory writer (the evaluation runner's): lines batched, on disk within the
linger, all of them on close, and readable by the run itself at any time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from omnilab.models import Message
from omnilab.trajectory import (
    ErrorEvent,
    MessageAdded,
    RunStart,
    TrajectoryWriter,
    linger,
    read_trajectory,
)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def test_lines_wait_in_memory_and_reach_the_file_within_the_linger(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "t.jsonl"
    writer = TrajectoryWriter(path, linger_s=0.3)
    writer.emit(RunStart(run_id=writer.run_id, question="q", agent="tir"))
    writer.emit(MessageAdded(message=Message.user("hello")))
    # No file yet (it is made by the first flush, off the caller's thread) ...
    assert _lines(path) == 0
    # ... then all three lines (header and two events) in one write, by the flusher thread.
    deadline = time.monotonic() + 5
    while _lines(path) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _lines(path) == 3
    writer.emit(ErrorEvent(error_kind="test", message="late"))
    writer.close(sync=False)
    assert _lines(path) == 4 and writer.closed
    last = read_trajectory(path).events[-1]
    assert isinstance(last, ErrorEvent) and last.message == "late"


def test_close_writes_what_is_still_buffered(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, linger_s=60)
    for i in range(5):
        writer.emit(ErrorEvent(error_kind="test", message=f"e{i}"))
    assert _lines(path) == 0
    writer.close()
    assert _lines(path) == 6
    with pytest.raises(ValueError, match="closed"):
        writer.emit(ErrorEvent(error_kind="test", message="after"))


def test_the_run_reads_back_every_line_it_emitted(tmp_path: Path) -> None:
    # An agent may read its own trajectory mid-run (read_trajectory(ctx.trajectory.path)).
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, linger_s=60)
    writer.emit(RunStart(run_id=writer.run_id, question="q", agent="tir"))
    writer.emit(MessageAdded(message=Message.user("hello")))
    traj = read_trajectory(path)
    assert [type(e) for e in traj.events] == [RunStart, MessageAdded]
    writer.close()


def test_exit_hook_writes_lines_of_writers_never_closed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, linger_s=60)
    writer.emit(ErrorEvent(error_kind="test", message="e"))
    linger.flush_due_now()  # what the exit hook runs
    assert _lines(path) == 2
    writer.close()


def test_a_failed_background_write_is_raised_to_the_writer(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    writer = TrajectoryWriter(blocker / "t.jsonl", linger_s=60)
    writer.emit(ErrorEvent(error_kind="test", message="e"))
    linger.flush_due_now()  # the file cannot be made: kept for the writer's own thread
    with pytest.raises(OSError):
        writer.emit(ErrorEvent(error_kind="test", message="next"))
    with pytest.raises(OSError):
        writer.close()
    assert writer.closed


@pytest.mark.parametrize(
    "kw", [{"linger_s": 0.0}, {"linger_s": -1.0}, {"linger_s": 1.0, "durable": True}]
)
def test_bad_linger_settings_are_refused(tmp_path: Path, kw: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="linger_s"):
        TrajectoryWriter(tmp_path / "t.jsonl", **kw)  # type: ignore[arg-type]
