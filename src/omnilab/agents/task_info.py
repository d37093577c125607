"""What a benchmark says about a task that the agent must be told: the task's metadata.

A multiple-choice question means nothing without its options, and a temporal-grounding answer
is scored only if it is written as the benchmark expects. :class:`TaskInfo` carries these facts
from the harness (or any caller) to the agent, which states them in its first message with
:func:`omnilab.agents.question.question_text`. Ground truth (answers, labelled time ranges)
never goes here: whatever is in a :class:`TaskInfo` may be shown to the model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TaskInfo"]


class TaskInfo(BaseModel):
    """The metadata of one task that an agent may show its model (none of it is an answer)."""

    model_config = ConfigDict(frozen=True)

    benchmark: str | None = None
    """The dataset adapter the task comes from (``mcq``, ``omniagent``, ``omnigaia``, ...): it
    picks how the question, its options and the answer format are worded."""
    question_type: str | None = None
    """The kind of answer asked for; OmniAgent's ``MCQ``, ``TR``, ``NUM``, ``SIZE`` or ``FF``."""
    options: dict[str, str] | None = None
    """Multiple-choice options by letter, in order."""
    answer_format: str | None = None
    """How the answer must be written, in words, when the dataset says so itself; otherwise the
    benchmark's wording for :attr:`question_type` is used."""
    duration: float | None = Field(default=None, ge=0)
    """The media duration in seconds as the dataset states it (OmniAgent ``duration``)."""
    category: str | None = None
    """The dataset's grouping label (Omni-DeepSearch: ``video/music``); agents do not show it to
    their model, but a scaffold's rules may depend on it (the deepsearch task-scoped budget)."""
