"""``omnigaia``: the OmniGAIA release's ``data/test_metadata.json`` (a JSON array).

Fields: ``id, question, omni_modal_input[{type, id, path}], annotated_solution, sources, answer,
total_steps, Level, required_external_tools, task_type, category``. Only ``question`` and
``answer`` are required; every other field may be missing or hold an unusual value, which is kept
as text (a new Level or task type becomes a new group). Media paths (``videos/x.mp4``) are
relative to the release's ``data/`` folder, i.e. next to the JSON file unless a media root is set.
"""

from __future__ import annotations

from typing import Any

from omnilab.bench.datasets._common import (
    ItemContext,
    RecordAdapter,
    answer_set,
    as_text,
    media_file,
    require_question,
    solution_steps,
    tool_names,
)
from omnilab.bench.task import Task, TaskFile, TaskMetadata

__all__ = ["ADAPTER", "convert"]


def _files(value: object, ctx: ItemContext) -> tuple[TaskFile, ...]:
    entries = value if isinstance(value, list) else [value] if value else []
    files: list[TaskFile] = []
    for position, entry in enumerate(entries):
        if isinstance(entry, str):
            # A bare path instead of {type, id, path}: the kind comes from the file name.
            files.append(media_file(ctx, entry))
            continue
        if not isinstance(entry, dict):
            continue
        given = as_text(entry.get("path")) or as_text(entry.get("url"))
        if given is None:
            continue
        kind = as_text(entry.get("type"))
        file_id = as_text(entry.get("id")) or f"{kind or 'file'}_{position}"
        files.append(media_file(ctx, given, kind=kind, file_id=file_id))
    return tuple(files)


def convert(record: dict[str, Any], ctx: ItemContext) -> Task:
    """One OmniGAIA item as a :class:`Task`."""
    question = require_question(record, "question")
    answers = answer_set(record.get("answer"))
    attributes = {
        key: text for key in ("total_steps",) if (text := as_text(record.get(key))) is not None
    }
    metadata = TaskMetadata(
        category=as_text(record.get("category")),
        level=as_text(record.get("Level", record.get("level"))),
        task_type=as_text(record.get("task_type")),
        solution=solution_steps(record.get("annotated_solution")),
        required_tools=tool_names(record.get("required_external_tools")),
        attributes=attributes,
    )
    return Task(
        id=as_text(record.get("id")) or str(ctx.index),
        dataset=ctx.dataset,
        question=question,
        files=_files(record.get("omni_modal_input"), ctx),
        answers=answers,
        metadata=metadata,
        original=record,
    )


ADAPTER = RecordAdapter(
    name="omnigaia",
    description="OmniGAIA test_metadata.json (video/audio/image questions, Levels, categories)",
    convert=convert,
    expected_fields=(("omni_modal_input",),),
)
