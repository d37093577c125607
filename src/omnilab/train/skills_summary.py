"""The sanitized summary of runs that skill learning shows a model (Code-X §2.3, H.2).

Per task it keeps what generalises: whether the answer was right (binary feedback), how the run
ended, how many commands ran, which programs and tool families it used and in what order, what
failed (timeouts, syntax errors, restarts), and the reference process's required tool families
when the dataset names them. Never the question or the answers.

Log-driven distillation (``traces``) is fed the raw execution trace as well (§2.3: "a separate
agent reviews raw execution logs"): each tool call in order with its command, its output cut
head and tail, its exit code and whether it timed out, and the case's outcome. Every text of a
trace goes through ``redact`` first (the task-specific strings of :class:`~.guard.Forbidden`:
question phrases, answers, entities, dates, file names become ``[case-specific]``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunDir
from omnilab.bench.scoring.code_x import audit_tools, exit_reason
from omnilab.bench.scoring.code_x_rules import IMAGE_TOOLS, engaged, matches_universe
from omnilab.textcut import cut_text
from omnilab.trajectory import Trajectory, TrajectoryError, read_trajectory

__all__ = ["Feedback", "run_summary", "trace_steps"]

_COMMAND_CHARS = 1500
_OUTPUT_CHARS = 1200
_TRACE_STEPS = 60

Feedback = Literal["binary", "traces"]
"""``binary``: right or wrong plus coarse process facts (calibration-set self-iteration);
``traces``: also the program sequence, failures and raw trace of each run (log-driven
distillation)."""

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
    if engaged(commands, "video") and not matches_universe(commands, IMAGE_TOOLS):
        families.append("video tools")
    if engaged(commands, "audio"):
        families.append("audio tools")
    if images_read or engaged(commands, "image"):
        families.append("image tools")
    if any("transcri" in c or "whisper" in c for c in commands):
        families.append("ASR")
    if any("ocr" in c.lower() or "tesseract" in c for c in commands):
        families.append("OCR")
    return families


def trace_steps(
    trajectory: Trajectory, redact: Callable[[str], str] = lambda text: text
) -> list[dict[str, Any]]:
    """The raw trace of a run, tool call by tool call (its first ``_TRACE_STEPS``): the tool,
    the command (or arguments), the output cut head and tail, the exit code, a timeout."""
    steps: list[dict[str, Any]] = []
    for event in trajectory.tool_results[:_TRACE_STEPS]:
        meta = event.result.metadata
        step: dict[str, Any] = {"tool": event.name}
        if event.name == "execute_commands":
            command = str(event.arguments.get("keystrokes", ""))
            step["command"] = cut_text(redact(command), _COMMAND_CHARS)
        elif event.name != "task_complete":
            step["arguments"] = cut_text(redact(str(event.arguments)), _COMMAND_CHARS)
        if event.result.error is not None:
            step["error"] = event.result.error.code
        step["output"] = cut_text(redact(event.result.text), _OUTPUT_CHARS)
        if meta.get("exit_code") is not None:
            step["exit_code"] = meta["exit_code"]
        if meta.get("timed_out"):
            step["timed_out"] = True
        steps.append(step)
    return steps


def _case(
    result: TaskResult,
    trajectory: Trajectory | None,
    feedback: Feedback,
    redact: Callable[[str], str],
) -> dict[str, Any]:
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
        case["trace"] = trace_steps(trajectory, redact)
    return case


def run_summary(
    runs: Sequence[Path],
    feedback: Feedback,
    *,
    redact: Callable[[str], str] = lambda text: text,
) -> dict[str, Any]:
    """The sanitized summary of the tasks of one or more run folders (see the module
    docstring); ``redact`` cleans every text taken from a trace."""
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
            cases.append(_case(result, trajectory, feedback, redact))
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
