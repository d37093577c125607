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

_POOLS: dict[tuple[int, str], ThreadPoolExecutor] = {}
_FINISHING: dict[Path, Future[None]] = {}
"""Finishes not done yet, by trajectory path (entries leave when done)."""

_FINISH_THREADS = 2
"""Threads finishing tasks' files that nobody waits for: every system call of such a thread
hands the interpreter lock back and forth with the event loop's thread, so more threads than
the disk needs slow the loop; no task waits for them."""


def file_threads() -> ThreadPoolExecutor:
    """This process's threads for task files that a task waits for: their own, so a create
    never queues behind other work of the default executor (the results log's syncs, name
    lookups)."""
    return _pool("omnilab-files", 8)


def _pool(name: str, workers: int) -> ThreadPoolExecutor:
    key = (os.getpid(), name)  # a forked child makes its own
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS.setdefault(
            key, ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
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
    future = _pool("omnilab-finish", _FINISH_THREADS).submit(finish, writer, workspace, sync)
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
