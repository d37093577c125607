"""One background thread that hands buffered trajectory lines to the OS by their deadline.

A :class:`~omnilab.trajectory.TrajectoryWriter` made with ``linger_s`` keeps its lines in
memory and asks this thread to flush it ``linger_s`` seconds after its first unflushed line;
closing (or :meth:`~omnilab.trajectory.TrajectoryWriter.flush`) writes the rest at once. At 64
tasks in flight, a write per event was the event loop's largest single cost (a system call
each); lingering writes a short task's trajectory in one. The thread starts on first use (none
at import) and, in a forked child, anew; lines still waiting when the process exits normally
are written by an exit hook.
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import itertools
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Protocol

__all__ = ["Flushable", "flush_before_reading", "flush_due_now", "lingering", "schedule"]


class Flushable(Protocol):
    """What the thread flushes: a writer's :meth:`flush` (a no-op once it is closed)."""

    def flush(self) -> None:
        """Hand the buffered lines to the operating system."""


class _State:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.heap: list[tuple[float, int, Flushable]] = []
        self.order = itertools.count()  # ties by deadline keep scheduling order
        self.pid: int | None = None


_STATE = _State()
_OPEN: weakref.WeakValueDictionary[str, Flushable] = weakref.WeakValueDictionary()
"""Open lingering writers by the absolute path of their file."""


def lingering(path: Path, writer: Flushable) -> None:
    """Note ``writer`` as buffering lines of ``path`` (until it is garbage)."""
    _OPEN[str(path.absolute())] = writer


def flush_before_reading(path: Path) -> None:
    """Flush the lingering writer of ``path`` in this process, if there is one, so a reader
    sees every line emitted so far (an agent may read back its own trajectory)."""
    if _OPEN:
        writer = _OPEN.get(str(path.absolute()))
        if writer is not None:
            writer.flush()


def schedule(writer: Flushable, linger_s: float) -> None:
    """Flush ``writer`` within ``linger_s`` seconds from now."""
    state = _STATE
    deadline = time.monotonic() + linger_s
    with state.cond:
        if state.pid != os.getpid():
            _start(state)
        heapq.heappush(state.heap, (deadline, next(state.order), writer))
        if state.heap[0][2] is writer:  # a new earliest deadline: the thread sleeps less
            state.cond.notify()


def flush_due_now() -> None:
    """Flush every scheduled writer now, in this thread (the exit hook; tests)."""
    state = _STATE
    with state.cond:
        waiting = [entry[2] for entry in sorted(state.heap)]
        state.heap.clear()
    for writer in waiting:
        _flush(writer)


def _start(state: _State) -> None:
    # Called holding state.cond. A forked child inherits the heap but not the thread.
    first = state.pid is None
    state.pid = os.getpid()
    state.heap.clear()
    threading.Thread(
        target=_loop, args=(state,), name="omnilab-trajectory-flush", daemon=True
    ).start()
    if first:
        atexit.register(flush_due_now)


_GATHER_S = 0.05
"""Writers due this soon after the first are flushed with it."""


def _loop(state: _State) -> None:
    while True:
        with state.cond:
            while not state.heap:
                state.cond.wait()
            now = time.monotonic()
            delay = state.heap[0][0] - now
            if delay > 0:
                state.cond.wait(delay)
                continue
            # Every writer due within the next moment, in one wake-up: tasks start in bursts,
            # and each wake-up of this thread cost the event loop's thread hand-overs of the
            # interpreter lock. Flushing early keeps the promise.
            due = []
            while state.heap and state.heap[0][0] <= now + _GATHER_S:
                due.append(heapq.heappop(state.heap)[2])
        for writer in due:  # outside the condition: a write never blocks a scheduling task
            _flush(writer)


def _flush(writer: Flushable) -> None:
    # A failed write (disk full) is kept by the writer, which raises it to its own caller on
    # the next emit or on close.
    with contextlib.suppress(OSError):
        writer.flush()
