"""The benchmark task: ``x = (q, F, Y)`` plus what each benchmark says about it.

A :class:`Task` holds the question, the typed input files (each with the id the question and the
tools use), the acceptable answers (a label plus aliases), normalised metadata for grouping and
scoring, and the dataset's original record, untouched, so nothing a benchmark ships is lost.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from omnilab import _wsread
from omnilab.inputs import FileKind, InputFile, guess_kind

__all__ = [
    "AnswerSet",
    "FileKind",
    "Span",
    "Task",
    "TaskFile",
    "TaskMetadata",
    "guess_kind",
]

Span = tuple[float, float]
"""A time range ``(start, end)`` in seconds."""

TaskFile = InputFile
"""One input file of a task (:class:`omnilab.inputs.InputFile`; the old name is kept)."""


class AnswerSet(BaseModel):
    """The acceptable answers: the dataset's label first, then aliases (units, spellings, ...)."""

    model_config = ConfigDict(frozen=True)

    label: str
    aliases: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        """The label and every alias, without repeats, label first."""
        return tuple(dict.fromkeys((self.label, *self.aliases)))


class TaskMetadata(BaseModel):
    """What a benchmark says about a task beyond question and answer, normalised for grouping.

    Values the adapters do not recognise are kept as text (a new Level or task type is a new
    group, not an error); the exact original values stay in :attr:`Task.original`.
    """

    model_config = ConfigDict(frozen=True)

    category: str | None = None
    """Domain or fine-grained category (OmniGAIA: ``Technology``; Omni-DeepSearch: ``image/music``)."""
    level: str | None = None
    """Difficulty (OmniGAIA: ``Easy``, ``Medium``, ``Hard``)."""
    task_type: str | None = None
    """Input or question type (OmniGAIA: ``image + audio``; OmniAgent: ``MCQ``, ``TR``, ...)."""
    options: dict[str, str] | None = None
    """Multiple-choice options by letter, in order."""
    spans: tuple[Span, ...] | None = None
    """Ground-truth time ranges of temporal-grounding tasks, in seconds."""
    solution: str | tuple[str, ...] | None = None
    """The annotated solution (OmniGAIA's steps), when the dataset has one."""
    required_tools: tuple[str, ...] = ()
    """Tools the annotators needed, normalised to ``snake_case`` (``Web Search`` -> ``web_search``)."""
    attributes: dict[str, str] = Field(default_factory=dict)
    """Further grouping dimensions of one benchmark (``retrieval_modality``, ``audio_type``)."""

    def get(self, key: str) -> str | None:
        """A grouping value by name: a field above, or one of :attr:`attributes`."""
        if key == "required_tools":
            return "+".join(sorted(self.required_tools)) if self.required_tools else None
        if key in ("category", "level", "task_type"):
            value: str | None = getattr(self, key)
            return value
        return self.attributes.get(key)


class Task(BaseModel):
    """One benchmark item, ready for an agent and a scorer."""

    model_config = ConfigDict(frozen=True)

    id: str
    dataset: str
    question: str
    files: tuple[TaskFile, ...] = ()
    answers: AnswerSet
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)
    original: dict[str, Any] = Field(default_factory=dict)
    """The dataset's record exactly as read (JSON values)."""

    @property
    def modalities(self) -> str:
        """The input-modality combination, order-independent: ``audio+image``, ``video``, ``none``."""
        kinds = sorted({f.kind for f in self.files})
        return "+".join(kinds) if kinds else "none"

    def file(self, file_id: str) -> TaskFile:
        """The input file named ``file_id``; ``KeyError`` if the task has none of that name."""
        for f in self.files:
            if f.id == file_id:
                return f
        raise KeyError(file_id)

    def missing_files(self) -> list[TaskFile]:
        """Input files that are not on disk, or not regular files reached through no link
        beneath their root (reads the file system). Files at URLs are not checked here: they
        are fetched where the task runs, and a failed fetch fails it."""
        return [f for f in self.files if f.url is None and not _wsread.regular_file(f.source)]
