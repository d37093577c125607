"""Workspace staging and the task prompt (Code-X Appendix C, Appendix H.2).

The task's files are copied into ``inputs/`` of the isolated workspace; the model is told only
the question, those workspace paths and the benchmark's evaluation prompt (the shared workspace
prefix of Figure 14, the network rules, and the body: Figure 16's for multiple choice, the
question block otherwise). Host paths never reach the model.
"""

from __future__ import annotations

from pathlib import Path

from omnilab import _wsread
from omnilab.agents.base import AgentTask, TaskInputError
from omnilab.agents.question import question_text
from omnilab.agents.templates import render
from omnilab.sandbox import place_file

__all__ = ["INPUTS_DIR", "stage_inputs", "task_prompt"]

INPUTS_DIR = "inputs"
"""Where the task's files go in the workspace."""

# How the prefix names each dataset adapter's benchmark ("You are evaluating a ... item").
_BENCHMARKS = {
    "omnigaia": "OmniGAIA",
    "omniagent": "OmniAgent",
    "omni-deepsearch": "Omni-DeepSearch",
    "mcq": "multiple-choice",
    "terminal-tasks": "TerminalBench-O-style",
}


def stage_inputs(task: AgentTask, workspace: Path) -> list[str]:
    """Copies each input file into ``workspace/inputs/`` and returns their workspace paths.

    A second file with the same name gets its input id in front (``inputs/<id>_<name>``). Each
    copy is written beside its target and renamed over it, never through a link.
    """
    staged: list[str] = []
    used: set[str] = set()
    for item in task.inputs:
        # A dataset's file opens beneath its media root through no link (item.source).
        if not _wsread.regular_file(item.source):
            raise TaskInputError(f"input {item.id} ({item.path.name}) is not a readable file")
        name = item.path.name
        if name in used:
            name = f"{item.id}_{name}"
        used.add(name)
        place_file(workspace, (INPUTS_DIR,), name, item.source)
        staged.append(f"{INPUTS_DIR}/{name}")
    return staged


def _options(task: AgentTask) -> str | None:
    info = task.metadata
    if not info.options or info.answer_format is not None:
        return None
    if info.benchmark == "omniagent" and (info.question_type or "MCQ").upper()[:3] != "MCQ":
        return None
    return "\n".join(f"{letter}. {text}" for letter, text in info.options.items())


def task_prompt(task: AgentTask, files: list[str], *, network: bool) -> str:
    """The first user message: workspace prefix, network rules, benchmark body, answer rule."""
    listed = "\n".join(f"- {f}" for f in files) if files else "- (none)"
    given = task.metadata.benchmark
    benchmark = _BENCHMARKS.get(given or "", given or "omni-modal")
    options = _options(task)
    if options is not None:
        body = render("coder_body_mcq", question=task.question, options=options)
    else:
        body = render("coder_body_open", question=question_text(task))
    parts = [
        render("coder_workspace_prefix", benchmark=benchmark, files=listed),
        render("coder_network_on" if network else "coder_network_off"),
        body,
        render("coder_answer_rule"),
    ]
    return "\n".join(p.strip("\n") for p in parts)
