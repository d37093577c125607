"""``omniagent``: OmniAgent-style video questions, JSON Lines (or a JSON array).

Two shapes of the OmniAgent release (HarryHsing/OmniAgent, README "Data Preparation") are read:

* evaluation files: ``video, question_type, question, options, answer`` and an optional
  ``domain`` (kept as the category), ``id`` and ``duration``;
* RL training files: the same plus ``fps``, ``duration_seconds``, ``has_audio``,
  ``data_source``, ``ability`` and ``extra_info``, with the question type carrying a dataset
  suffix (``MCQ_LongVR-Short``, ``MCQ_Holmes``, ``TR_LongVALE-Short``, ``TR_MultiHop``,
  ``SIZE_VSI``).

The base type is what OmniAgent's own code takes, ``question_type.split("_", 1)[0].upper()``:
``MCQ`` (answer: a letter), ``TR`` (temporal grounding; answer: ``[[start, end], ...]`` in
seconds, as a list or its JSON text), ``NUM`` (a number), ``SIZE`` (a number scored by MRA) or
``FF`` (free-form text), as in the instruction template (Appendix B.5). The base type becomes
``task_type`` and the ``question_type`` attribute; the suffix is kept as ``question_subtype``.
An MCQ answer given as the option text is mapped to its letter; the text becomes an alias. A
SIZE question's unit ("(in square meters)") is kept as the ``unit`` attribute.
"""

from __future__ import annotations

from typing import Any

from omnilab.bench._parse import option_prefix, parse_options
from omnilab.bench.datasets._common import (
    ItemContext,
    RecordAdapter,
    SkipItem,
    answer_set,
    as_text,
    media_file,
    require_question,
)
from omnilab.bench.scoring.numbers import extract_number
from omnilab.bench.scoring.rules import base_question_type
from omnilab.bench.scoring.spans import parse_spans
from omnilab.bench.scoring.units import expected_unit
from omnilab.bench.task import AnswerSet, Task, TaskMetadata

__all__ = ["ADAPTER", "QUESTION_TYPES", "convert", "mcq_answers"]

QUESTION_TYPES = ("MCQ", "TR", "NUM", "SIZE", "FF")


def mcq_answers(answer: object, options: dict[str, str] | None) -> AnswerSet:
    """The answer set of a multiple-choice item: the letter, then the option's text as aliases.

    ``answer`` may be a letter (``"b"``), a prefixed option (``"B. Paris"``) or the option text.
    """
    raw = answer_set(answer)
    text = raw.label.strip()
    letter: str | None = None
    if len(text) == 1 and text.isalpha():
        letter = text.upper()
    elif options:
        prefixed = option_prefix(text)
        if prefixed is not None and prefixed[0] in options:
            letter = prefixed[0]
        else:
            letter = next((k for k, v in options.items() if v.casefold() == text.casefold()), None)
    if letter is None:
        raise SkipItem("answer not an option", f"answer {text!r} is neither a letter nor an option")
    if options and letter not in options:
        raise SkipItem("answer not an option", f"answer {letter} is not among {', '.join(options)}")
    aliases = [f"{letter}. {options[letter]}", options[letter]] if options else []
    return AnswerSet(label=letter, aliases=tuple(dict.fromkeys([*aliases, *raw.aliases])))


def _source_folder(video: str | None) -> str | None:
    """The benchmark a video comes from in the release's layout ``videos/<source>/<file>``."""
    if not video:
        return None
    parts = video.replace("\\", "/").split("/")
    parent = parts[-2] if len(parts) >= 2 else ""
    return None if parent in ("", ".", "..", "videos") else parent


def convert(record: dict[str, Any], ctx: ItemContext) -> Task:
    """One OmniAgent item as a :class:`Task`."""
    question = require_question(record, "question")
    raw_type = as_text(record.get("question_type")) or "FF"
    qtype = base_question_type(raw_type)
    subtype = raw_type.split("_", 1)[1].strip() if "_" in raw_type else ""
    options = parse_options(record.get("options"))
    answer = record.get("answer")
    spans = None
    if qtype == "MCQ":
        answers = mcq_answers(answer, options)
    elif qtype == "TR":
        spans = parse_spans(answer)
        if spans is None:
            raise SkipItem("bad spans", f"TR answer {answer!r} is not [[start, end], ...]")
        answers = AnswerSet(label=str([list(s) for s in spans]))
    elif qtype in ("NUM", "SIZE"):
        if extract_number(answer) is None:
            raise SkipItem("bad number", f"{qtype} answer {answer!r} holds no number")
        answers = answer_set(answer)
    else:
        answers = answer_set(answer)
    video = as_text(record.get("video")) or as_text(record.get("video_path"))
    files = (media_file(ctx, video, kind="video", file_id="video"),) if video else ()
    attributes = {"question_type": qtype}
    if subtype:
        attributes["question_subtype"] = subtype
    for key, names in (
        ("duration", ("duration", "duration_seconds")),
        ("fps", ("fps",)),
        ("has_audio", ("has_audio",)),
    ):
        value = next((t for n in names if (t := as_text(record.get(n))) is not None), None)
        if value is not None:
            attributes[key] = value
    source = as_text(record.get("source")) or _source_folder(video)
    if source:
        attributes["source"] = source
    unit = expected_unit(question) if qtype in ("NUM", "SIZE") else None
    if unit is not None:
        attributes["unit"] = unit
    metadata = TaskMetadata(
        category=as_text(record.get("category")) or as_text(record.get("domain")),
        task_type=qtype,
        options=options if qtype == "MCQ" else None,
        spans=spans,
        attributes=attributes,
    )
    return Task(
        id=as_text(record.get("id")) or str(ctx.index),
        dataset=ctx.dataset,
        question=question,
        files=files,
        answers=answers,
        metadata=metadata,
        original=record,
    )


ADAPTER = RecordAdapter(
    name="omniagent",
    description="OmniAgent video questions, JSONL (MCQ, TR, NUM, SIZE, FF and their variants)",
    convert=convert,
    expected_fields=(("video", "video_path"), ("question_type",)),
)
