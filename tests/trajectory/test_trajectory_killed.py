"""Acceptance: a trajectory is valid, versioned and complete after a run killed mid-way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from omnilab.trajectory import SCHEMA_VERSION, MessageAdded, RunStart, read_trajectory

# Emits events forever, printing how many are written; big events make a kill mid-line likely.
WRITER = """
import sys
from pathlib import Path
from omnilab.models import Message
from omnilab.trajectory import MessageAdded, RunStart, TrajectoryWriter

writer = TrajectoryWriter(Path(sys.argv[1]), run_id="killed-run")
writer.emit(RunStart(run_id="killed-run", question="q", agent="tir"))
n = 0
while True:
    n += 1
    writer.emit(MessageAdded(message=Message.user(f"notice {n} " + "x" * 50_000)))
    print(n, flush=True)
"""


def test_a_sigkilled_writer_leaves_every_reported_event(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    reported = 0
    try:
        for line in proc.stdout:
            reported = int(line)
            if reported >= 25:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert reported >= 25, "the writer died before it was killed"

    traj = read_trajectory(path)
    assert traj.header.schema_version == SCHEMA_VERSION
    assert traj.header.run_id == "killed-run"
    assert isinstance(traj.events[0], RunStart)
    notices = traj.events[1:]
    # Everything the writer reported as written is there, in order, and nothing is invented.
    assert len(notices) >= reported
    for n, event in enumerate(notices, start=1):
        assert isinstance(event, MessageAdded)
        assert event.message.text.startswith(f"notice {n} ")
    assert traj.status == "incomplete"
    assert len(traj.warnings) == (1 if traj.truncated else 0)
