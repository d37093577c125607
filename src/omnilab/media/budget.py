"""A process-wide memory budget for media work: tasks wait for room instead of growing the process.

Decoding a long video into 128 frames holds the decoder's pictures and every kept frame at
once (tens to hundreds of MB); at ``--concurrency 64`` sixty-four such jobs at a time would
need many GB although two cores can only run two of them. Each job reserves its estimated
peak here first and waits while the reservations in flight would pass
``media.memory_budget_bytes``; a job larger than the whole budget runs alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MemoryBudget", "media_budget"]


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
