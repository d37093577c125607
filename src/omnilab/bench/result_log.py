"""A results log that survives a crash: each line written and flushed once the task's files are
(at once, or within 20 ms of a file thread finishing them), fsynced in the background (after
the files it points to, such as the task's trajectory), and a cut-off last line (a killed
process) removed before appending again."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import sys
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from omnilab._ownfolders import open_new
from omnilab.bench.errors import BenchError
from omnilab.bench.results import TaskResult
from omnilab.bench.task_files import finishing

__all__ = ["ResultLog", "repair_tail"]

_POLL_S = 0.02
"""How often lines waiting for their task's files are looked at between appends."""


def repair_tail(path: Path) -> bool:
    """Cut a partial last line (a process killed mid-write) so that appending starts on a fresh
    line; returns whether anything was cut."""
    if not path.exists():
        return False
    size = path.stat().st_size
    if size == 0:
        return False
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return False
        # Walk back block by block to the last newline; results are a few KB each.
        end = size
        while end > 0:
            start = max(0, end - 65536)
            f.seek(start)
            block = f.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                f.truncate(start + cut + 1)
                return True
            end = start
        f.truncate(0)
        return True


class ResultLog:
    """Appends results to ``results.jsonl``, one line per task.

    Each line is written and flushed once its task's files are finished (at once, or within
    20 ms of a file thread finishing them), so a killed process loses nothing that was written
    and never a trajectory a written line points to; ``fsync`` runs in a worker thread after
    every append (appends made while one runs share the next), so a slow disk never stalls the
    event loop. The files an append names in ``sync_first`` (the task's trajectory, closed
    unsynced) are synced in that thread before the log, so neither the tasks nor the event loop
    wait on the disk for them. Open with ``async with``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repaired = False
        """Whether a cut-off last line was removed on opening."""
        self._file: Any = None
        self._dirty = asyncio.Event()
        self._closing = False
        self._syncer: asyncio.Task[None] | None = None
        self._unsynced: list[Path] = []
        self._waiting: list[tuple[Future[None] | None, TaskResult, Path | None]] = []
        """Lines waiting for their task's files to be finished."""
        self._poll: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> ResultLog:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.repaired = repair_tail(self.path)
            self._file = open_new(self.path, append=True)  # never through a planted link
        except OSError as e:
            raise BenchError(f"cannot write results to {self.path}: {e.strerror or e}") from None
        self._syncer = asyncio.create_task(self._sync_loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def append(self, result: TaskResult, *, sync_first: Path | None = None) -> None:
        """Write one result line now, or, while a file thread is still finishing the task's
        files (:func:`~omnilab.bench.task_files.finishing`) or earlier lines wait, within
        ``_POLL_S`` of that being done, with the other lines ready then. Lines keep the order
        of the appends. The fsync follows in the background, after that of ``sync_first`` (a
        file the result points to) when given. Call it on the event loop the log was opened
        on."""
        if self._file is None:
            raise RuntimeError("ResultLog is not open")
        pending = finishing(sync_first) if sync_first is not None else None
        if pending is None and not self._waiting:
            self._write([(result, sync_first)])
            return
        # The line waits for the trajectory it points to: a process killed in between leaves
        # neither, and a resumed run runs the task again. Looked at every 20 ms, not signalled
        # by the file thread (a wake-up of the event loop per task), and the lines found
        # ready are written together: at 64 tasks in flight each system call on the loop is
        # a chance for a file thread to take the interpreter lock.
        self._waiting.append((pending, result, sync_first))
        if self._poll is None:
            self._poll = asyncio.get_running_loop().call_later(_POLL_S, self._on_poll)

    def _on_poll(self) -> None:
        self._poll = None
        self._write_finished()
        if self._waiting and self._file is not None:
            self._poll = asyncio.get_running_loop().call_later(_POLL_S, self._on_poll)

    def _write_finished(self, *, wait: bool = False) -> None:
        """Write the waiting lines up to the first whose task files are not finished yet (all
        of them, after waiting for their files, when ``wait``), in the order appended."""
        if not self._waiting:
            return
        if wait:
            pendings = [pending for pending, _, _ in self._waiting if pending is not None]
            concurrent.futures.wait(pendings, timeout=60)
        ready: list[tuple[TaskResult, Path | None]] = []
        for pending, result, sync_first in self._waiting:
            if pending is not None and not pending.done():
                break
            error = pending.exception() if pending is not None else None
            if error is not None:
                why = f"trajectory not written: {type(error).__name__}: {error}"
                result = result.model_copy(update={"error": why, "error_kind": "crash"})
            ready.append((result, sync_first))
        del self._waiting[: len(ready)]
        if ready:
            self._write(ready)

    def _write(self, lines: list[tuple[TaskResult, Path | None]]) -> None:
        """Append these results in one write (a kill cuts at most the last line short)."""
        self._unsynced += [path for _, path in lines if path is not None]
        self._file.write("".join(result.model_dump_json() + "\n" for result, _ in lines))
        self._file.flush()
        self._dirty.set()

    async def _sync_loop(self) -> None:
        fd = self._file.fileno()
        while not self._closing:
            await self._dirty.wait()
            self._dirty.clear()
            files, self._unsynced = self._unsynced, []
            await asyncio.to_thread(_sync, files, fd)

    async def aclose(self) -> None:
        """Fsync what was written and close the file (also while the run is being cancelled)."""
        if self._file is None:
            return
        # Lines waiting for their trajectories: the file threads finish them in milliseconds,
        # also while the run is being cancelled (they are not cancellable).
        self._write_finished(wait=True)
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None
        self._closing = True
        self._dirty.set()
        if self._syncer is not None:
            # Let the syncer finish its fsync rather than cancel it: a cancelled to_thread
            # leaves the thread running on a descriptor about to be closed.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._syncer)
        files, self._unsynced = self._unsynced, []
        _sync(files, self._file.fileno())
        self._file.close()
        self._file = None


def _sync(files: list[Path], fd: int) -> None:
    """Sync ``files`` (a missing or unreadable one is skipped: the task left none), then the
    log behind descriptor ``fd``: with one ``syncfs`` of the log's file system where there is
    one (Linux), which writes back the trajectories and the log in one journal commit instead
    of one commit per file; else file by file, the log last."""
    if files and _syncfs(fd):
        return
    for path in files:
        try:
            handle = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(handle)
        except OSError:
            pass  # a file system that cannot sync a read-only descriptor: nothing more to do
        finally:
            os.close(handle)
    os.fsync(fd)


@functools.cache
def _libc_syncfs() -> Callable[[int], int] | None:
    # Imported here, in the syncing thread, once: ctypes costs ~50 ms to import.
    import ctypes

    try:
        call: Callable[[int], int] = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    return call


def _syncfs(fd: int) -> bool:
    """``syncfs(2)`` on the file system of ``fd``; False where there is none or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    call = _libc_syncfs()
    return call is not None and call(fd) == 0
