"""The question as the agent's first message states it: with its options and answer format.

How each benchmark words this is a prompt file under ``agents/prompts/`` that names its source:

- multiple choice (the ``mcq`` adapter, and any task with options whose benchmark has no
  wording of its own): Agent-Omni's Figure 3 template (``question_mcq``), "Question: ..." /
  "Choices: ..." and a single letter;
- OmniAgent tasks (``MCQ``, ``TR``, ``NUM``, ``SIZE``, ``FF``) and tasks whose dataset gives an
  answer format: the question, the options if any, and the answer format
  (``question_typed``), OmniAgent's own line for the type from its Figure 4
  (``omniagent_answer_formats``) unless the dataset gave one;
- anything else (OmniGAIA, Omni-DeepSearch, a plain question): the question as it is, which is
  what those benchmarks send.
"""

from __future__ import annotations

from functools import cache

from omnilab.agents.base import AgentTask
from omnilab.agents.task_info import TaskInfo
from omnilab.agents.templates import load_template, render

__all__ = ["omniagent_answer_format", "question_text"]

_MCQ = "MCQ"


@cache
def _omniagent_formats() -> dict[str, str]:
    """Question type -> format, from the verbatim Figure 4 lines ("- NUM/SIZE: ...")."""
    formats: dict[str, str] = {}
    for line in load_template("omniagent_answer_formats").template.splitlines():
        head, sep, text = line.strip().removeprefix("- ").partition(": ")
        if sep:
            formats.update(dict.fromkeys(head.split("/"), text))
    return formats


def omniagent_answer_format(question_type: str) -> str | None:
    """OmniAgent's answer format for ``question_type`` (``MCQ``, ``TR``, ``NUM``, ``SIZE``,
    ``FF``; a variant such as ``MCQ_LongVR-Short`` counts as its base type), else ``None``."""
    base = question_type.strip().upper().split("_", 1)[0]
    return _omniagent_formats().get(base)


def _lettered(options: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in options.items())


def _is_agent_omni_mcq(info: TaskInfo) -> bool:
    if not info.options or info.answer_format is not None:
        return False
    if info.benchmark == "mcq":
        return True
    return info.benchmark != "omniagent" and info.question_type in (None, _MCQ)


def question_text(task: AgentTask | str) -> str:
    """The question block of the first user message (see the module docstring); a bare string
    is a question without metadata and comes back unchanged."""
    if isinstance(task, str):
        return task
    info = task.metadata
    if _is_agent_omni_mcq(info):
        assert info.options is not None  # checked by _is_agent_omni_mcq
        return render("question_mcq", question=task.question, choices=_lettered(info.options))
    qtype = info.question_type
    answer_format = info.answer_format
    if answer_format is None and qtype is not None:
        answer_format = omniagent_answer_format(qtype)
    if answer_format is None:
        if not info.options:
            return task.question
        # Options but no known format (an unknown question type): still show them, and ask for
        # the letter, since an option is what is being asked for.
        answer_format = _omniagent_formats()[_MCQ]
    options = f"Options:\n{_lettered(info.options)}\n" if info.options else ""
    return render(
        "question_typed",
        question=task.question,
        options=options,
        kind=f" ({qtype})" if qtype else "",
        answer_format=answer_format,
    )
