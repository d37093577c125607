"""What was written for one run's report (:class:`RunReport`): built by
:mod:`omnilab.report.build`, compared by :mod:`omnilab.report.compare`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omnilab.bench.metrics import RunSummary
from omnilab.report.rows import TaskRow

__all__ = ["RunReport"]


@dataclass
class RunReport:
    """What was written for one run."""

    label: str
    folder: Path
    """The run's report folder (its ``index.html``)."""
    summary: RunSummary
    rows: list[TaskRow]
    agent: str = ""
    """The run's agent and model (from run.json), so a comparison names more than folders."""
    model: str = ""
