"""The sanitized summary of runs that skill learning shows a model (Code-X §2.3, H.2).

Per task it keeps only what generalises: whether the answer was right (binary feedback), how the
run ended, how many commands ran, which programs and tool families it used and in what order,
what failed (timeouts, syntax errors, restarts), and the reference process's required tool
families when the dataset names them. Never the question, the answers, file names or command
arguments: those are task-specific facts the guide must not learn.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunDir
from omnilab.bench.scoring.code_x import audit_tools, exit_reason
from omnilab.bench.scoring.code_x_rules import (
    AUDIO_TOOLS,
    IMAGE_TOOLS,
    VIDEO_TOOLS,
    matches_universe,
)
from omnilab.trajectory import Trajectory, TrajectoryError, read_trajectory

__all__ = ["Feedback", "run_summary"]

Feedback = Literal["binary", "traces"]
"""``binary``: right or wrong plus coarse process facts (calibration-set self-iteration);
``traces``: also the program sequence and failures of each run (log-driven distillation)."""

# The program of each command of a pipeline: the first word after a separator.
_PROGRAM = re.compile(r"(?:^|[|;&]\s*|&&\s*|\|\|\s*|\$\(\s*)([A-Za-z_][\w.+-]*)", re.MULTILINE)
_KNOWN = re.compile(r"^[a-z][a-z0-9_.+-]{1,30}$")
_SKIP = {
    "cd",
    "echo",
    "then",
    "do",
    "done",
    "fi",
    "else",
    "if",
    "for",
    "while",
    "in",
    "export",
    "EOF",
}


def _programs(command: str) -> list[str]:
    found = []
    for name in _PROGRAM.findall(command):
        if name not in _SKIP and _KNOWN.match(name):
            found.append(name)
    return found


def _families(commands: Sequence[str], images_read: int) -> list[str]:
    families = []
    if matches_universe(commands, VIDEO_TOOLS):
        families.append("video tools")
    if matches_universe(commands, AUDIO_TOOLS):
        families.append("audio tools")
    if images_read or matches_universe(commands, IMAGE_TOOLS):
        families.append("image tools")
    if any("transcri" in c or "whisper" in c for c in commands):
        families.append("ASR")
    if any("ocr" in c.lower() or "tesseract" in c for c in commands):
        families.append("OCR")
    return families


def _case(result: TaskResult, trajectory: Trajectory | None, feedback: Feedback) -> dict[str, Any]:
    case: dict[str, Any] = {
        "correct": bool(result.score is not None and result.score.correct),
        "modalities": result.modalities,
        "empty_answer": not (result.extracted or "").strip(),
    }
    if result.metadata.required_tools:
        case["reference_required_tools"] = sorted(set(result.metadata.required_tools))
    if result.metadata.solution is not None:
        steps = result.metadata.solution
        case["reference_steps"] = (
            len(steps) if isinstance(steps, tuple) else len(steps.splitlines())
        )
    if trajectory is None:
        case["trace"] = "missing"
        return case
    audit = audit_tools(trajectory)
    case["exit"] = exit_reason(trajectory)
    case["turns"] = len(trajectory.model_calls)
    case["commands"] = len(audit.commands)
    case["images_read"] = audit.images_read
    case["tool_families"] = _families(audit.commands, audit.images_read)
    if feedback == "traces":
        sequence = [p for c in audit.commands for p in _programs(c)]
        case["program_sequence"] = sequence[:40]
        results = trajectory.tool_results
        case["failures"] = {
            "timeouts": sum(1 for r in results if r.result.metadata.get("timed_out")),
            "shell_restarts": sum(1 for r in results if r.result.metadata.get("state_lost")),
            "nonzero_exits": sum(
                1 for r in results if r.result.metadata.get("exit_code") not in (None, 0)
            ),
            "syntax_failures": audit.syntax_fail,
            "bad_tool_calls": audit.unparseable + audit.disallowed,
        }
    return case


def run_summary(runs: Sequence[Path], feedback: Feedback) -> dict[str, Any]:
    """The sanitized summary of the tasks of one or more run folders (see the module docstring)."""
    cases: list[dict[str, Any]] = []
    for folder in runs:
        run = RunDir(folder)
        for result in run.results():
            if result.error is not None and result.score is None:
                cases.append({"correct": False, "run_failed": result.error_kind or "error"})
                continue
            try:
                trajectory = read_trajectory(run.trajectory_file(result.task_id, result.sample))
            except (TrajectoryError, OSError):
                trajectory = None
            cases.append(_case(result, trajectory, feedback))
    right = sum(1 for c in cases if c.get("correct"))
    exits = Counter(str(c.get("exit", "unknown")) for c in cases)
    families = Counter(f for c in cases for f in c.get("tool_families", []))
    return {
        "feedback": feedback,
        "tasks": len(cases),
        "correct": right,
        "exits": dict(exits),
        "tool_families_used": dict(families),
        "cases": cases,
    }
