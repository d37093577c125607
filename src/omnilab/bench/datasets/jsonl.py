"""``jsonl``: the generic format, one task per line: ``x = (q, F, Y)``.

Each line has ``question``, ``files`` (paths, or ``{type, id, path}``; also ``image``/``audio``/
``video``/``document``) and ``answers`` (a list: the label first, then aliases) or ``answer``
plus optional ``aliases``. Optional: ``id``, ``category``, ``level``, ``task_type``, ``options``,
``spans`` (``[[start, end], ...]``), ``solution``, ``required_tools`` and ``metadata`` (a map of
further grouping values). A JSON array of the same objects is read as well.
"""

from __future__ import annotations

from typing import Any

from omnilab.bench._parse import parse_options
from omnilab.bench.datasets._common import (
    ItemContext,
    RecordAdapter,
    answer_set,
    as_text,
    require_question,
    solution_steps,
    tool_names,
)
from omnilab.bench.datasets.mcq import collect_files
from omnilab.bench.scoring.spans import parse_spans
from omnilab.bench.task import Task, TaskMetadata

__all__ = ["ADAPTER", "convert"]


def convert(record: dict[str, Any], ctx: ItemContext) -> Task:
    """One generic record as a :class:`Task`."""
    question = require_question(record, "question", "prompt")
    answers = answer_set(record.get("answers", record.get("answer")), record.get("aliases"))
    extra = record.get("metadata")
    attributes = {
        str(k): text
        for k, v in (extra.items() if isinstance(extra, dict) else [])
        if (text := as_text(v)) is not None
    }
    metadata = TaskMetadata(
        category=as_text(record.get("category")),
        level=as_text(record.get("level")),
        task_type=as_text(record.get("task_type")),
        options=parse_options(record.get("options")),
        spans=parse_spans(record.get("spans")) if record.get("spans") is not None else None,
        solution=solution_steps(record.get("solution")),
        required_tools=tool_names(record.get("required_tools")),
        attributes=attributes,
    )
    return Task(
        id=as_text(record.get("id")) or str(ctx.index),
        dataset=ctx.dataset,
        question=question,
        files=collect_files(record, ctx),
        answers=answers,
        metadata=metadata,
        original=record,
    )


ADAPTER = RecordAdapter(
    name="jsonl",
    description="generic JSON Lines: question, files, answers (label first, then aliases)",
    convert=convert,
)
