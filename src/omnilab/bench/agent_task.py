"""A benchmark task as the agent gets it: question, inputs and the metadata it must be told.

The agent sees the options, the question type, the answer format, the stated duration and the
category (:class:`~omnilab.agents.task_info.TaskInfo`; the category feeds a scaffold's rules,
such as Omni-DeepSearch's budget per task type), never the answers nor the labelled time ranges
of a grounding task (:attr:`~omnilab.bench.task.TaskMetadata.spans` are ground truth).
"""

from __future__ import annotations

from omnilab.agents.base import AgentTask
from omnilab.agents.task_info import TaskInfo
from omnilab.bench.task import Task

__all__ = ["agent_task", "task_info"]

# Datasets whose task_type is a question type (the kind of answer), not a grouping label.
_QUESTION_TYPED = frozenset({"omniagent"})


def _question_type(task: Task) -> str | None:
    meta = task.metadata
    stated = meta.attributes.get("question_type")
    if stated:
        return stated
    return meta.task_type if task.dataset in _QUESTION_TYPED else None


def _duration(task: Task) -> float | None:
    try:
        value = float(task.metadata.attributes.get("duration", ""))
    except ValueError:
        return None  # absent, or not a plain number of seconds
    return value if value >= 0 and value != float("inf") else None


def task_info(task: Task) -> TaskInfo:
    """What of ``task``'s metadata the agent must tell its model (see the module docstring)."""
    answer_format = task.metadata.attributes.get("answer_format")
    return TaskInfo(
        benchmark=task.dataset,
        question_type=_question_type(task),
        options=dict(task.metadata.options) if task.metadata.options else None,
        answer_format=answer_format or None,
        duration=_duration(task),
        category=task.metadata.category,
    )


def agent_task(task: Task) -> AgentTask:
    """The :class:`AgentTask` for ``task``; repeated input ids get a suffix on the way."""
    return AgentTask(
        id=task.id, question=task.question, inputs=list(task.files), metadata=task_info(task)
    )
