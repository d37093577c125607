"""The run's garbage-collection tuning is scoped: thresholds and the frozen heap come back."""

from __future__ import annotations

import gc
import weakref

from omnilab.bench.gc_pause import YOUNG_THRESHOLD, run_collections


class _Node:
    me: object = None


def test_run_collections_tunes_inside_and_restores_after() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with run_collections():
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        assert gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > 0  # the heap loaded before the run is out of sight
        # Cycles made during the run are still collected.
        node = _Node()
        node.me = node
        ref = weakref.ref(node)
        del node
        gc.collect()
        assert ref() is None
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_overlapping_runs_restore_once_the_outermost_ends() -> None:
    before = gc.get_threshold()
    with run_collections():
        with run_collections():
            assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        # The inner run ended while the outer one goes on: still tuned.
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_collection_turned_off_stays_off() -> None:
    before = gc.get_threshold()
    gc.disable()
    try:
        with run_collections():
            assert not gc.isenabled()
            assert gc.get_threshold() == before
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
