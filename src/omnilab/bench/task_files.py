"""A task's files, kept off the event loop: its trajectory made and finished and its workspace
removed when left empty, in threads of their own; and which tasks' files are still being
finished.

At 64 tasks in flight each file-system call on the loop, or each wait for a worker thread
(which must win the interpreter lock back after every system call), holds a task's slot: a
task of the evaluation runner therefore ends without waiting for its trajectory's last write.
Whoever needs the finished file waits for :func:`finishing`: the results log before it writes
the task's result line (so a result never points to a trajectory that is not complete), and
the process and Ray workers before they return a task.
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO

from omnilab.trajectory import TrajectoryWriter

__all__ = ["create_trajectory_file", "file_threads", "finish", "finish_later", "finishing"]

_POOLS: dict[int, ThreadPoolExecutor] = {}
_FINISHING: dict[Path, Future[None]] = {}
"""Finishes not done yet, by trajectory path (entries leave when done)."""


def file_threads() -> ThreadPoolExecutor:
    """This process's threads for task files: their own, so a create never queues behind
    other work of the default executor (the results log's syncs, name lookups)."""
    pool = _POOLS.get(os.getpid())
    if pool is None:
        pool = _POOLS.setdefault(
            os.getpid(), ThreadPoolExecutor(max_workers=8, thread_name_prefix="omnilab-files")
        )
    return pool


def create_trajectory_file(trajectory: Path) -> IO[str]:
    """``trajectory`` opened for writing text (emptied), its folder made if missing."""
    trajectory.parent.mkdir(parents=True, exist_ok=True)
    return trajectory.open("w", encoding="utf-8")


def finish(writer: TrajectoryWriter | None, workspace: Path, sync: bool) -> None:
    """Close ``writer`` (its last lines written; synced if ``sync``) and remove ``workspace``
    if it is empty."""
    try:
        if writer is not None:
            writer.close(sync=sync)
    finally:
        # Not empty (the agent left files worth keeping) or never made: keep it.
        with contextlib.suppress(OSError):
            workspace.rmdir()


def finish_later(writer: TrajectoryWriter, workspace: Path, sync: bool) -> Future[None]:
    """:func:`finish` in a file thread, noted under the writer's path until it is done."""
    future = file_threads().submit(finish, writer, workspace, sync)
    path = writer.path
    _FINISHING[path] = future

    def forget(done: Future[None]) -> None:
        if _FINISHING.get(path) is done:
            del _FINISHING[path]

    future.add_done_callback(forget)  # at once, in this thread, if it is already done
    return future


def finishing(trajectory: Path) -> Future[None] | None:
    """The finish of the task whose trajectory is ``trajectory``, while it is not done."""
    return _FINISHING.get(trajectory)
