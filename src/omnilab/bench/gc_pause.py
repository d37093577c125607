"""Garbage collection tuned for a long run of many small tasks.

A run keeps every loaded module, the dataset and the plan alive for its whole length, and each
task allocates thousands of short-lived objects (events, messages, coroutines). With the
default thresholds the collector walks the long-lived heap again and again: on 1,000 one-call
tasks that was about a sixth of the eval process's CPU. :func:`run_collections` moves what
exists when the run starts out of the collector's sight (:func:`gc.freeze`) and collects the
youngest generation less often; both are undone when the run ends. Nothing is leaked:
reference counting still frees acyclic garbage at once, and cycles are still collected, only
in larger batches.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["YOUNG_THRESHOLD", "run_collections"]

YOUNG_THRESHOLD = 20_000
"""Allocations between collections of the youngest generation during a run (default 700):
most task objects die by reference count before they would be walked, so fewer survive into
the older generations, whose collections are the expensive ones."""


_depth = 0  # runs in progress in this process: only the outermost tunes and restores


@contextlib.contextmanager
def run_collections() -> Iterator[None]:
    """Within the block: the heap at entry frozen, young collections every
    :data:`YOUNG_THRESHOLD` allocations; when the outermost such block ends, the previous
    thresholds and an unfrozen heap (runs in one process may overlap)."""
    global _depth
    if _depth == 0 and not gc.isenabled():  # collection turned off on purpose: leave it so
        yield
        return
    before = gc.get_threshold()
    _depth += 1
    if _depth == 1:
        gc.freeze()
        gc.set_threshold(max(before[0], YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            gc.set_threshold(*before)
            gc.unfreeze()
