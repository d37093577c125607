"""``mcq``: multiple-choice questions over any mix of media, as Agent-Omni evaluates them.

Agent-Omni (Figure 3) asks ``Question: {question}`` / ``Choices: {choices}`` and expects a single
option letter. Items (JSON array or JSON Lines) have ``question``, ``options`` or ``choices`` (a
list like ``["A. cat", "B. dog"]`` or plain texts lettered in order, a letter -> text map, or one
string with an option per line), ``answer`` (a letter, ``"B. dog"`` or the option text) and media
under ``files`` (paths or ``{type, id, path}``) and/or ``image``, ``audio``, ``video``,
``document`` (a path or a list). ``category``, ``task_type`` (or ``task``) and ``benchmark`` are
kept for grouping.
"""

from __future__ import annotations

from typing import Any

from omnilab.bench._parse import parse_options
from omnilab.bench.datasets._common import (
    ItemContext,
    RecordAdapter,
    SkipItem,
    as_text,
    media_file,
    require_question,
)
from omnilab.bench.datasets.omniagent import mcq_answers
from omnilab.bench.task import Task, TaskFile, TaskMetadata

__all__ = ["ADAPTER", "collect_files", "convert"]

_MEDIA_KEYS = ("image", "audio", "video", "document")


def collect_files(record: dict[str, Any], ctx: ItemContext) -> tuple[TaskFile, ...]:
    """Input files from ``files`` (paths or ``{type, id, path}``) and the per-kind media keys."""
    files: list[TaskFile] = []
    entries = record.get("files")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            given = as_text(entry.get("path"))
            if given:
                kind = as_text(entry.get("type")) or as_text(entry.get("kind"))
                files.append(media_file(ctx, given, kind=kind, file_id=as_text(entry.get("id"))))
        elif (given := as_text(entry)) is not None:
            files.append(media_file(ctx, given))
    for kind in _MEDIA_KEYS:
        for key in (kind, f"{kind}s", f"{kind}_path"):
            value = record.get(key)
            for given in value if isinstance(value, list) else [value]:
                text = as_text(given)
                if text:
                    files.append(media_file(ctx, text, kind=kind))
    # Two entries naming one file (e.g. ``files`` and ``image``) would be sent twice.
    unique = {f.path: f for f in files}
    return tuple(unique.values())


def convert(record: dict[str, Any], ctx: ItemContext) -> Task:
    """One multiple-choice item as a :class:`Task`."""
    question = require_question(record, "question")
    options = parse_options(record.get("options", record.get("choices")))
    if not options:
        raise SkipItem("no options", "a multiple-choice item needs options or choices")
    answers = mcq_answers(record.get("answer"), options)
    attributes = {
        key: text for key in ("benchmark", "subset") if (text := as_text(record.get(key)))
    }
    metadata = TaskMetadata(
        category=as_text(record.get("category")),
        task_type=as_text(record.get("task_type")) or as_text(record.get("task")),
        options=options,
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
    name="mcq",
    description="multiple choice over any media (Agent-Omni style: question, options, letter)",
    convert=convert,
    expected_fields=(("options", "choices"),),
)
