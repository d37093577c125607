"""Search use of a run of the ``deepsearch`` agent: searches per tool and budget exhaustion.

The agent closes each run with a ``search budget`` note (``StepNote``) holding the searches it
used per tool, each tool's limit, the tools whose budget it spent and how many calls were
refused for a spent budget. This module reads those notes from a run folder's trajectories;
runs of other agents have none and get ``None``.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel
from rich.table import Table

from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunDir
from omnilab.trajectory import StepNote, TrajectoryError, read_trajectory

__all__ = ["SearchStats", "ToolSearchStats", "run_search_stats", "search_stats", "search_table"]

NOTE_LABEL = "search budget"
_LABEL_JSON = json.dumps(NOTE_LABEL).encode()


class ToolSearchStats(BaseModel):
    """One search tool over the tasks."""

    total: int
    mean: float
    """Searches per task (tasks that offered the tool)."""
    limit: int | None
    """Its budget (the most common one when runs differ)."""
    exhausted: int
    """Tasks that spent this tool's budget."""


class SearchStats(BaseModel):
    """Search use over the tasks whose trajectory has a search budget note."""

    tasks: int
    by_tool: dict[str, ToolSearchStats]
    exhausted_tasks: int
    """Tasks that spent the budget of at least one tool."""
    exhaustion_rate: float
    refused_calls: int
    """Calls refused because their tool's budget was spent."""
    exhaustion_by: dict[str, dict[str, float]] = {}
    """Exhaustion rate per retrieval modality and per audio type."""


def search_stats(
    notes: Sequence[tuple[StepNote, TaskResult | None]],
) -> SearchStats | None:
    """Aggregate the agent's closing notes (with each task's result, for the groupings)."""
    if not notes:
        return None
    used: dict[str, list[int]] = {}
    limits: dict[str, Counter[int]] = {}
    exhausted: Counter[str] = Counter()
    spent_tasks = 0
    refused = 0
    groups: dict[str, dict[str, list[bool]]] = {"retrieval_modality": {}, "audio_type": {}}
    for note, result in notes:
        data = note.data
        for tool, count in dict(data.get("used") or {}).items():
            used.setdefault(tool, []).append(int(count))
        for tool, limit in dict(data.get("limits") or {}).items():
            limits.setdefault(tool, Counter())[int(limit)] += 1
        spent = list(data.get("exhausted") or [])
        exhausted.update(spent)
        spent_tasks += bool(spent)
        refused += int(data.get("refused") or 0)
        attributes = result.metadata.attributes if result is not None else {}
        for key, by_value in groups.items():
            value = attributes.get(key)
            if value is not None:
                by_value.setdefault(str(value), []).append(bool(spent))
    return SearchStats(
        tasks=len(notes),
        by_tool={
            tool: ToolSearchStats(
                total=sum(counts),
                mean=statistics.fmean(counts),
                limit=limits[tool].most_common(1)[0][0] if tool in limits else None,
                exhausted=exhausted[tool],
            )
            for tool, counts in used.items()
        },
        exhausted_tasks=spent_tasks,
        exhaustion_rate=spent_tasks / len(notes),
        refused_calls=refused,
        exhaustion_by={
            key: {v: sum(flags) / len(flags) for v, flags in sorted(by_value.items())}
            for key, by_value in groups.items()
            if by_value
        },
    )


def run_search_stats(
    run: str | Path, results: Sequence[TaskResult] | None = None
) -> SearchStats | None:
    """The search statistics of the run folder ``run`` (``None`` when no task has a note)."""
    folder = RunDir(run)
    if results is None and not any(
        _has_label(p) for p in folder.path.glob("trajectories/**/*.jsonl")
    ):
        return None  # no note anywhere: the results need not be read back either
    chosen = list(results) if results is not None else folder.results()
    notes: list[tuple[StepNote, TaskResult | None]] = []
    for result in chosen:
        path = folder.trajectory_file(result.task_id, result.sample)
        if not _has_label(path):
            continue
        try:
            trajectory = read_trajectory(path)
        except (TrajectoryError, OSError):
            continue
        found = [e for e in trajectory.events if isinstance(e, StepNote) and e.label == NOTE_LABEL]
        if found:
            notes.append((found[-1], result))
    return search_stats(notes)


def _has_label(path: Path) -> bool:
    # Most runs are of agents that write no such note: a file whose text does not hold the
    # label cannot have one, and is not decoded (decoding every file was most of the cost).
    try:
        return _LABEL_JSON in path.read_bytes()
    except OSError:
        return False


def search_table(stats: SearchStats) -> Table:
    """The statistics as one table: searches per tool, budget and exhaustion."""
    table = Table(
        title=f"Searches ({stats.tasks} tasks; budget exhausted in {stats.exhausted_tasks}, "
        f"{stats.exhaustion_rate:.1%}; {stats.refused_calls} calls refused)"
    )
    for column in ("tool", "searches", "per task", "budget", "exhausted"):
        table.add_column(column, justify="left" if column == "tool" else "right")
    for tool, row in stats.by_tool.items():
        table.add_row(
            tool,
            str(row.total),
            f"{row.mean:.2f}",
            "-" if row.limit is None else str(row.limit),
            f"{row.exhausted} ({row.exhausted / stats.tasks:.1%})",
        )
    lines = [
        f"exhaustion by {key}: " + ", ".join(f"{v} {r:.1%}" for v, r in rates.items())
        for key, rates in stats.exhaustion_by.items()
    ]
    table.caption = "\n".join(lines) or None
    return table
