"""TerminalBench-O-style task specs and their grader (Code-X §4, Appendix F).

A task asks the agent to *make* files under ``output/`` of its workspace. Its spec lists the
expected output files, weighted dimensions and gates::

    score = 100 * sum_i w_i * m_i / sum_i w_i        (each metric m_i in [0, 1])
    pass  iff score >= 70 and every gate holds; a failed gate makes the score 0

Every file of ``outputs`` is also an ``exists`` gate (Appendix F: a missing output fails).

Dimensions (``kind``): ``segments`` (time segments, Hungarian-matched IoU with a tolerance
window), ``labels`` (accuracy of a label per key), ``set`` (F1), ``text`` (1 - CER), ``number``
(within a tolerance), ``judge`` (an LLM rates a file against a rubric, 0-10), ``check`` (a named
Python check of the task, for what needs the media itself). Gates: ``exists``, ``json_schema``,
``vocabulary`` (a field's values come from a closed list), ``ids_match`` (ids in one file are
exactly those of another). Hidden references stay in the dataset record, never in the
workspace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omnilab.bench.scoring.base import Score
from omnilab.bench.scoring.code_x_metrics import (
    char_similarity,
    f1,
    read_json,
    read_output,
    segment_iou,
    tolerance_score,
)
from omnilab.bench.scoring.code_x_spec import (
    CheckFn,
    Dimension,
    Gate,
    Grade,
    TaskSpec,
    field_values,
)
from omnilab.bench.scoring.terminal_checks import TERMINAL_CHECKS
from omnilab.bench.task import Task
from omnilab.bench.templates import render
from omnilab.models import Message, Model
from omnilab.trajectory import Trajectory

__all__ = [
    "CHECKS",
    "Dimension",
    "Gate",
    "Grade",
    "TaskSpec",
    "TerminalTaskScorer",
    "field_values",
    "grade",
    "task_workspace",
]

CHECKS: dict[str, CheckFn] = dict(TERMINAL_CHECKS)
"""Named checks a ``check`` dimension can use (the shipped tasks' checks are here from the
start, :mod:`omnilab.bench.scoring.terminal_checks`; a plugin may add its own)."""


def _items(workspace: Path, file: str, path: str) -> list[dict[str, Any]] | None:
    value = field_values(read_json(workspace, file), path)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        return None
    return value


def _gate(workspace: Path, gate: Gate) -> tuple[bool, str]:
    if gate.kind == "exists":
        data = read_output(workspace, gate.file)
        return (data is not None and len(data) > 0), f"{gate.file} exists and is not empty"
    if gate.kind == "json_schema":
        import jsonschema  # here: every eval process imports the scorers, few grade a schema

        value = read_json(workspace, gate.file)
        try:
            jsonschema.validate(value, gate.schema_ or {})
        except jsonschema.ValidationError as e:
            return False, f"{gate.file} does not match its schema ({e.message})"
        return value is not None, f"{gate.file} matches its schema"
    items = _items(workspace, gate.file, gate.field)
    if items is None:
        return False, f"{gate.file}: {gate.field or 'the root'} is not a list of objects"
    values = [item.get(gate.item_field) for item in items]
    if gate.kind == "vocabulary":
        bad = sorted({str(v) for v in values if v not in gate.vocabulary})
        return (
            not bad,
            f"{gate.file}: values outside the vocabulary: {bad}" if bad else "in vocabulary",
        )
    other = _items(workspace, gate.other_file, gate.other_field)
    if other is None:
        return (
            False,
            f"{gate.other_file}: {gate.other_field or 'the root'} is not a list of objects",
        )
    theirs = [item.get(gate.other_item_field) for item in other]
    same = sorted(map(str, values)) == sorted(map(str, theirs))
    return same, f"ids of {gate.file} and {gate.other_file} {'match' if same else 'differ'}"


def _segments(items: list[dict[str, Any]] | None, d: Dimension) -> list[tuple[float, float]] | None:
    if items is None:
        return None
    try:
        return [(float(i[d.start]), float(i[d.end])) for i in items]
    except (KeyError, TypeError, ValueError):
        return None


async def _judge(workspace: Path, d: Dimension, spec: TaskSpec, judge: Model | None) -> float:
    if judge is None:
        raise ValueError(f"dimension {d.name} is judged by an LLM: pass --judge")
    data = read_output(workspace, d.file)
    if data is None:
        return 0.0
    prompt = render(
        "code_x_rubric",
        instruction=spec.instruction,
        rubric=d.rubric,
        path=d.file,
        content=data[:20000].decode(errors="replace"),
    )
    reply = (await judge.generate([Message.user(prompt)])).text
    found = re.findall(r"Score:\s*(\d+)", reply)
    return min(10, int(found[-1])) / 10 if found else 0.0


async def _metric(workspace: Path, d: Dimension, spec: TaskSpec, judge: Model | None) -> float:
    if d.kind == "judge":
        return await _judge(workspace, d, spec, judge)
    if d.kind == "check":
        check = CHECKS.get(d.check)
        if check is None:
            raise ValueError(f"dimension {d.name}: unknown check {d.check!r}")
        outcome = check(workspace, d)
        measured = await outcome if not isinstance(outcome, float | int) else outcome
        return float(measured)
    if d.kind == "segments":
        predicted = _segments(_items(workspace, d.file, d.field), d)
        if predicted is None:
            return 0.0
        reference = [(float(a), float(b)) for a, b in d.reference]
        return segment_iou(predicted, reference, tolerance=d.tolerance)[0]
    if d.kind == "labels":
        items = _items(workspace, d.file, d.field) or []
        got = {str(i.get(d.key)): " ".join(str(i.get(d.value, "")).lower().split()) for i in items}
        ref: Mapping[str, str] = d.reference
        right = sum(1 for k, v in ref.items() if got.get(k) == " ".join(v.lower().split()))
        return right / len(ref) if ref else 1.0
    value: Any = (
        field_values(read_json(workspace, d.file), d.field) if d.file.endswith(".json") else None
    )
    if d.kind == "set":
        if not isinstance(value, list):
            return 0.0
        found = [str(v.get(d.key)) if isinstance(v, dict) else str(v) for v in value]
        return f1(found, list(d.reference))
    if d.kind == "text":
        if not d.file.endswith(".json"):
            raw = read_output(workspace, d.file)
            value = raw.decode(errors="replace") if raw is not None else None
        return char_similarity(value, str(d.reference)) if isinstance(value, str) else 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return tolerance_score(float(value), float(d.reference), d.tolerance)


async def grade(spec: TaskSpec, workspace: Path, *, judge: Model | None = None) -> Grade:
    """Grade the files the agent made in ``workspace`` (see the module docstring)."""
    gates: dict[str, bool] = {}
    notes: list[str] = []
    # Appendix F: a missing output file fails the task, whether or not a gate names it.
    named = {g.file for g in spec.gates if g.kind == "exists"}
    for file in spec.outputs:
        if file not in named:
            ok, why = _gate(workspace, Gate(kind="exists", file=file))
            gates[f"output:exists:{file}"] = ok
            if not ok:
                notes.append(f"missing output: {why.removesuffix(' exists and is not empty')}")
    for n, gate in enumerate(spec.gates):
        ok, why = _gate(workspace, gate)
        gates[f"{n}:{gate.kind}:{gate.file}"] = ok
        if not ok:
            notes.append(why)
    metrics = {d.name: round(await _metric(workspace, d, spec, judge), 6) for d in spec.dimensions}
    total = sum(d.weight for d in spec.dimensions)
    score = 100 * sum(d.weight * metrics[d.name] for d in spec.dimensions) / total
    if not all(gates.values()):
        score = 0.0
    score = round(score, 3)
    return Grade(
        score=score, passed=score >= spec.pass_score, metrics=metrics, gates=gates, notes=notes
    )


def task_workspace(trajectory: Trajectory) -> Path | None:
    """The workspace a run worked in: recorded in its config (``coder``), else the run folder's
    ``workspaces/<task>`` beside ``trajectories/<task>.jsonl``."""
    start = trajectory.run_start
    recorded = start.config.get("workspace") if start is not None else None
    if isinstance(recorded, str) and recorded:
        return Path(recorded)
    path = trajectory.path
    if path is not None and path.parent.name == "trajectories":
        return path.parent.parent / "workspaces" / path.stem
    return None


class TerminalTaskScorer:
    """``terminal-tasks``: grades the files a run made against its task's spec (``value`` is the
    score / 100, ``correct`` the pass verdict); LLM-judged dimensions use ``judge``."""

    name = "terminal-tasks"
    needs_trajectory = True

    def __init__(self, judge: Model | None = None) -> None:
        self.judge = judge

    async def score(
        self, task: Task, prediction: str, *, trajectory: Trajectory | None = None
    ) -> Score:
        """Grade ``task``'s outputs in the run's workspace."""
        raw = task.original.get("spec")
        if not isinstance(raw, dict):
            raise ValueError(f"task {task.id} has no TerminalBench-O spec (field 'spec')")
        spec = TaskSpec.model_validate(raw)
        workspace = task_workspace(trajectory) if trajectory is not None else None
        if workspace is None or not workspace.is_dir():
            raise ValueError(f"the workspace of task {task.id} is gone; it holds the outputs")
        result = await grade(spec, workspace, judge=self.judge)
        details: dict[str, float | str | None] = {"score": result.score}
        details.update({f"m:{k}": v for k, v in result.metrics.items()})
        details["gates"] = "all hold" if all(result.gates.values()) else "; ".join(result.notes)
        return Score(
            scorer=self.name,
            value=result.score / 100,
            correct=result.passed,
            extracted=prediction.strip()[:200] or None,
            details=details,
        )
