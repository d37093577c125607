"""``omniagent``: OmniAgent-style video questions, JSON Lines (or a JSON array).

Each item has ``video, question_type, question, options, answer`` (and optionally ``id``,
``duration``). ``question_type`` is ``MCQ`` (answer: a letter), ``TR`` (temporal grounding;
answer: ``[[start, end], ...]`` in seconds), ``NUM`` (a number), ``SIZE`` (a number scored by
MRA) or ``FF`` (free-form text), as in the OmniAgent instruction template (Appendix B.5).
An MCQ answer given as the option text is mapped to its letter; the text becomes an alias.
"""

from __future__ import annotations

from typing import Any

from omnilab.bench._parse import option_prefix, parse_number, parse_options, parse_spans
from omnilab.bench.datasets._common import (
    ItemContext,
    RecordAdapter,
    SkipItem,
    answer_set,
    as_text,
    media_file,
    require_question,
)
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


def convert(record: dict[str, Any], ctx: ItemContext) -> Task:
    """One OmniAgent item as a :class:`Task`."""
    question = require_question(record, "question")
    qtype = (as_text(record.get("question_type")) or "FF").upper()
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
        if parse_number(answer) is None:
            raise SkipItem("bad number", f"{qtype} answer {answer!r} holds no number")
        answers = answer_set(answer)
    else:
        answers = answer_set(answer)
    video = as_text(record.get("video")) or as_text(record.get("video_path"))
    files = (media_file(ctx, video, kind="video", file_id="video"),) if video else ()
    attributes = {"question_type": qtype}
    duration = as_text(record.get("duration"))
    if duration is not None:
        attributes["duration"] = duration
    metadata = TaskMetadata(
        category=as_text(record.get("category")),
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
    description="OmniAgent video questions, JSONL (MCQ, TR, NUM, SIZE, FF)",
    convert=convert,
)
