"""``omni-deepsearch``: audio clips + a question + a short verifiable answer.

The paper (Omni-DeepSearch, §3.2) publishes no file format, so this adapter reads JSON or JSON
Lines items with ``question``, ``answer`` (a string, or a list whose first entry is the label),
the clips under ``audio``/``audios``/``audio_path``/``audio_paths`` (a path or a list), the
retrieval modality under ``retrieval_modality``/``task_type``/``type`` and the audio content type
under ``audio_type``/``audio_category``. Both axes are normalised to the paper's names:

* retrieval modality: ``single`` (single-audio text search), ``multi`` (multi-audio text search),
  ``image`` (single-audio image-text search), ``video`` (single-audio video search);
  without one, two or more clips mean ``multi`` and one clip ``single``;
* audio type: ``speech``, ``music``, ``animal`` (the paper's table says BIO), ``ambient`` (ENV).

``category`` is one of the paper's 15: ``<modality>/<audio type>`` for single-audio tasks and
``multi/<N> clips`` for multi-audio ones. Unknown spellings are kept, lower-cased.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnilab.bench.datasets._common import (
    ItemContext,
    RecordAdapter,
    answer_set,
    as_text,
    media_file,
    require_question,
)
from omnilab.bench.task import Task, TaskFile, TaskMetadata

__all__ = ["ADAPTER", "DeepSearchAdapter", "audio_type", "convert", "retrieval_modality"]

_AUDIO_KEYS = ("audio", "audios", "audio_path", "audio_paths", "audio_files", "files")
_MODALITY_KEYS = ("retrieval_modality", "retrieval_target", "task_type", "type")
_AUDIO_TYPE_KEYS = ("audio_type", "audio_category", "audio_content_type")
_AUDIO_TYPES = {
    "speech": "speech",
    "voice": "speech",
    "music": "music",
    "animal": "animal",
    "bio": "animal",
    "ambient": "ambient",
    "env": "ambient",
    "environment": "ambient",
    "environmental": "ambient",
}


def retrieval_modality(value: str | None, clips: int) -> str:
    """The paper's retrieval-modality name for a spelling such as ``Single-audio image-text search``."""
    text = (value or "").strip().lower()
    if not text:
        return "multi" if clips > 1 else "single"
    for name in ("multi", "image", "video"):
        if name in text:
            return name
    if "single" in text or "text" in text:
        return "single"
    return text


def audio_type(value: str | None) -> str | None:
    """The paper's audio content type for a spelling such as ``Animal sound`` or ``ENV``."""
    text = (value or "").strip().lower()
    if not text:
        return None
    first = text.replace("_", " ").replace("-", " ").split()[0]
    return _AUDIO_TYPES.get(first, text)


def _clips(record: dict[str, Any], ctx: ItemContext) -> tuple[TaskFile, ...]:
    for key in _AUDIO_KEYS:
        value = record.get(key)
        entries = value if isinstance(value, list) else [value] if value else []
        files: list[TaskFile] = []
        for position, entry in enumerate(entries):
            given = as_text(entry.get("path")) if isinstance(entry, dict) else as_text(entry)
            if given is None:
                continue
            file_id = as_text(entry.get("id")) if isinstance(entry, dict) else None
            kind = as_text(entry.get("type")) if isinstance(entry, dict) else None
            # Under the audio keys a file is a clip; a generic ``files`` list names its kinds.
            kind = kind or (None if key == "files" else "audio")
            files.append(
                media_file(ctx, given, kind=kind, file_id=file_id or f"{kind or 'file'}_{position}")
            )
        if files:
            return tuple(files)
    return ()


def convert(record: dict[str, Any], ctx: ItemContext) -> Task:
    """One Omni-DeepSearch item as a :class:`Task`."""
    question = require_question(record, "question", "query")
    answers = answer_set(record.get("answer", record.get("answers")), record.get("aliases"))
    files = _clips(record, ctx)
    clips = sum(1 for f in files if f.kind == "audio")
    raw_modality = next(
        (as_text(record.get(k)) for k in _MODALITY_KEYS if as_text(record.get(k))), None
    )
    raw_type = next(
        (as_text(record.get(k)) for k in _AUDIO_TYPE_KEYS if as_text(record.get(k))), None
    )
    modality = retrieval_modality(raw_modality, clips)
    kind = audio_type(raw_type)
    attributes = {"retrieval_modality": modality}
    if modality == "multi":
        # The paper splits multi-audio tasks by clip count and reports audio types only for
        # single-audio tasks, so a multi-audio task has no single audio type.
        category = f"multi/{clips} clips"
    else:
        category = f"{modality}/{kind or 'unknown'}"
        if kind is not None:
            attributes["audio_type"] = kind
    return Task(
        id=as_text(record.get("id")) or str(ctx.index),
        dataset=ctx.dataset,
        question=question,
        files=files,
        answers=answers,
        metadata=TaskMetadata(category=category, task_type=modality, attributes=attributes),
        original=record,
    )


class DeepSearchAdapter(RecordAdapter):
    """The record adapter, plus the offline sample when no file is given: ``omnilab eval
    omni-deepsearch`` without ``--data`` builds it once in the cache
    (:func:`omnilab.tools.mediasearch.sample.sample_folder`) and evaluates it."""

    def prepare(self, path: Path | None) -> Path:
        """``path`` itself, or the sample's ``tasks.jsonl`` when there is none."""
        if path is not None:
            return path
        from omnilab.tools.mediasearch.sample import sample_folder

        return sample_folder() / "tasks.jsonl"


ADAPTER = DeepSearchAdapter(
    name="omni-deepsearch",
    description="Omni-DeepSearch (audio clips + question; by retrieval modality and audio type)",
    convert=convert,
    expected_fields=(_AUDIO_KEYS,),
)
