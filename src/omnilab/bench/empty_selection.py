"""Why a run has no task to run: the dataset gave none (every item skipped, and why, as
``omnilab data check`` says it), or the filters the user gave matched none."""

from __future__ import annotations

from omnilab.bench.datasets import DatasetLoad
from omnilab.bench.errors import BenchError
from omnilab.bench.run_dir import Selection
from omnilab.plural import plural

__all__ = ["empty_selection_error"]


def empty_selection_error(loaded: DatasetLoad, selection: Selection) -> BenchError:
    """The one-line error for a selection of no tasks from ``loaded``."""
    if not loaded.tasks:
        if not loaded.skipped:
            return BenchError(f"{loaded.path} holds no {loaded.dataset} items")
        reasons = "; ".join(f"{reason}: {n}" for reason, n in loaded.skip_counts.items())
        first = loaded.skipped[0]
        where = f"item {first.item_id or first.index}"
        detail = f" ({where}: {first.detail})" if first.detail else f" (first: {where})"
        return BenchError(
            f"{loaded.path}: all {plural(len(loaded.skipped), 'item')} skipped as "
            f"{loaded.dataset} items ({reasons}){detail}; see omnilab data check "
            f"{loaded.dataset} --data {loaded.path}"
        )
    given = [
        flag
        for flag, value in (
            ("--level", selection.levels),
            ("--category", selection.categories),
            ("--ids", selection.ids),
            ("--limit", selection.limit),
        )
        if value
    ]
    return BenchError(
        f"no task matches the filters ({', '.join(given) or 'none given'}); the dataset has "
        f"{plural(len(loaded.tasks), 'task')}"
    )
