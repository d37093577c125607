"""What a TerminalBench-O-style task spec says (Code-X §4, Appendix F): the expected outputs,
weighted dimensions and gates (:class:`TaskSpec`), the grader's verdict (:class:`Grade`), and the
shape of a named check. The grader is :mod:`omnilab.bench.scoring.code_x_tasks`; the dataset
(:mod:`omnilab.bench.datasets.terminal_tasks`) and the shipped checks
(:mod:`omnilab.bench.scoring.terminal_checks`) build on these types."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PASS_SCORE", "CheckFn", "Dimension", "Gate", "Grade", "TaskSpec", "field_values"]

PASS_SCORE = 70.0


class Dimension(BaseModel):
    """One weighted, normalised metric."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    weight: float = Field(gt=0)
    kind: Literal["segments", "labels", "set", "text", "number", "judge", "check"]
    file: str = ""
    """The output file it reads (relative to the workspace)."""
    field: str = ""
    """Dotted path to the value in a JSON file (``shots``, ``result.start``); empty: the root."""
    key: str = "id"
    """``labels``/``set``: the item field that names an item (a ``set`` of objects)."""
    value: str = "label"
    """``labels``: the item field holding the label."""
    start: str = "start"
    end: str = "end"
    tolerance: float = Field(default=2.0, ge=0)
    """``segments``: seconds each boundary may be off (the paper's ±2 s); ``number``: the
    tolerance of :func:`tolerance_score`."""
    rubric: str = ""
    """``judge``: what the judge checks."""
    check: str = ""
    """``check``: the name of a check in :data:`CHECKS`."""
    reference: Any = None
    """The hidden reference (segments, labels by key, a set, a text, a number, check data)."""


class Gate(BaseModel):
    """A condition every passing submission must meet."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["exists", "json_schema", "vocabulary", "ids_match"]
    file: str
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    field: str = ""
    """``vocabulary``/``ids_match``: dotted path to a list of items, then ``item_field``."""
    item_field: str = ""
    vocabulary: list[str] = Field(default_factory=list)
    other_file: str = ""
    other_field: str = ""
    other_item_field: str = ""


class TaskSpec(BaseModel):
    """A TerminalBench-O-style task: what to make and how it is graded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instruction: str
    outputs: list[str]
    dimensions: list[Dimension]
    gates: list[Gate] = Field(default_factory=list)
    pass_score: float = PASS_SCORE


class Grade(BaseModel):
    """The grader's verdict: score (0-100), pass, each metric and each gate."""

    score: float
    passed: bool
    metrics: dict[str, float]
    gates: dict[str, bool]
    notes: list[str] = Field(default_factory=list)


CheckFn = Callable[[Path, Dimension], Awaitable[float] | float]


def field_values(data: Any, path: str) -> Any:
    """The value at dotted ``path`` in JSON ``data`` (``None`` when absent)."""
    for part in [p for p in path.split(".") if p]:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data
