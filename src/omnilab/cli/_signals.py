"""SIGTERM handled like Ctrl-C: a scheduler's stop (``kill PID``, Slurm's preemption, ``docker
stop``) ends a run the way Ctrl-C does, with in-flight trajectories closed and the line that
says how to continue, instead of Python's default instant death (exit 143)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["term_as_interrupt"]


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    # whatever handles SIGINT now (asyncio's runner cancels its main task) handles this too
    signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def term_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises SIGINT (main thread only; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
