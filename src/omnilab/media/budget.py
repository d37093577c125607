"""Process-wide budgets for media work: tasks wait for room instead of growing the process.

Memory: decoding a long video into 128 frames holds the decoder's pictures and every kept frame
at once (tens to hundreds of MB); at ``--concurrency 64`` sixty-four such jobs at a time would
need many GB although two cores can only run two of them. Each job reserves its estimated
peak here first and waits while the reservations in flight would pass
``media.memory_budget_bytes``; a job larger than the whole budget runs alone.

CPU: each decoding loop (a worker of ``frames``, a soundtrack's extraction) holds one of
``media.decode_slots`` slots (default: the cores this process may use) while it runs. More
decoders than cores finish no sooner, and each one's pictures push the others' out of the
processor caches: at ``--concurrency 8`` on two cores, 16 decoders at once cost about 1.5x the
CPU seconds of the same work run two at a time.

GIL-bound loops (a soundtrack's extraction runs Python for each of its ~77,000 AAC packets in
30 minutes, and releases the GIL for a few microseconds of decoding in between) also run one at
a time: two of them hand the GIL to each other at every packet, and measured on two cores two
30-minute soundtracks at once took 2.2x the CPU seconds and 1.5x the wall time of one after the
other (480,000 context switches instead of 8).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MemoryBudget", "cores", "decode_slot", "media_budget"]


class MemoryBudget:
    """Bytes reserved by jobs in flight, at most ``limit`` (one job larger than that runs alone)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        """Largest total reserved at once (what the budget let through)."""
        self._cond = threading.Condition()

    @contextmanager
    def reserve(self, nbytes: int) -> Iterator[None]:
        """Hold ``nbytes`` of the budget for the block, waiting until they fit."""
        n = max(0, min(nbytes, self.limit))
        with self._cond:
            while self.used and self.used + n > self.limit:
                self._cond.wait()
            self.used += n
            self.peak = max(self.peak, self.used)
        try:
            yield
        finally:
            with self._cond:
                self.used -= n
                self._cond.notify_all()


_BUDGET: MemoryBudget | None = None
_LOCK = threading.Lock()


def media_budget() -> MemoryBudget:
    """This process's budget (``media.memory_budget_bytes``, read on first use)."""
    global _BUDGET
    with _LOCK:
        if _BUDGET is None:
            from omnilab.config import get_settings

            _BUDGET = MemoryBudget(get_settings().media.memory_budget_bytes)
        return _BUDGET


_SLOTS: threading.BoundedSemaphore | None = None
_GIL_BOUND = threading.Lock()


def cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def decode_slot(*, gil_bound: bool = False) -> Iterator[None]:
    """Hold one of the process's decoding slots (``media.decode_slots``) for the block; with
    ``gil_bound``, also the one slot of GIL-bound loops (taken first, so a loop waiting for it
    holds no decoding slot).

    Never nest two: a worker that waits for a second slot while holding one could wait for
    ever once every slot is held that way.
    """
    global _SLOTS
    with _LOCK:
        if _SLOTS is None:
            from omnilab.config import get_settings

            _SLOTS = threading.BoundedSemaphore(get_settings().media.decode_slots or cores())
        slots = _SLOTS
    if gil_bound:
        with _GIL_BOUND, slots:
            yield
    else:
        with slots:
            yield
