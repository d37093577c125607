"""OmniAgent's scorer (eq. 2 by question type), under omnilab's rules or the release's.

:class:`OmniAgentScorer` scores with omnilab's scorers (``rules="omnilab"``) or with the rewards
the authors' released environment computes (``rules="release"``, :func:`release_reward`), and
records both verdicts (``details["strict"]`` omnilab's, ``details["reference"]`` the release's)
so ``omnilab metrics`` shows both Pass@1 figures side by side.

HarryHsing/OmniAgent ``agent_system/environments/env_package/video_env.py`` (``step``, the answer
branch) scores a final answer by question type: MCQ by ``content.strip().upper() ==
answer[0].strip().upper()``; TR by the IoU of ``json.loads(content)`` read as spans (merged, a
reversed span rejects the whole prediction); NUM by equality after ``round(x, 2)`` of the first
number of each (``[+-]?\\d+(?:\\.\\d+)?``); SIZE by MRA over thresholds 0.50..0.95 of those
numbers. Its batch evaluator (``demo/omniagent_eval.py``) counts a sample correct when that
reward is above 0.5. omnilab's own scorers read answers more leniently (option letters in text,
spans written as text, units).
"""

from __future__ import annotations

import json
import math
import re
from typing import Literal

from omnilab.bench.scoring.base import Score, Scorer
from omnilab.bench.scoring.choice import MultipleChoice
from omnilab.bench.scoring.rules import (
    AnswerSetMatch,
    MeanRelativeAccuracy,
    NumericMatch,
    TemporalIoU,
    base_question_type,
    mean_relative_accuracy,
    temporal_iou,
)
from omnilab.bench.scoring.spans import parse_spans
from omnilab.bench.task import Span, Task

__all__ = ["CORRECT_ABOVE", "OmniAgentScorer", "release_reward"]

CORRECT_ABOVE = 0.5
"""``omniagent_eval.py``: correct when the total reward is above 0.5."""

_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def _first_number(text: str) -> float | None:
    found = _NUMBER.findall(text)
    return float(found[0]) if found else None


def _spans(value: object) -> list[Span] | None:
    """``_spans_to_ndarray``: a list of pairs or one flat pair; ``None`` when it is neither."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        return None
    if not value:
        return []
    try:
        if isinstance(value[0], list | tuple):
            pairs = [(float(s), float(e)) for s, e in value]
        elif len(value) == 2 and all(isinstance(x, int | float) for x in value):
            pairs = [(float(value[0]), float(value[1]))]
        else:
            return None
    except (TypeError, ValueError):
        return None
    if any(not math.isfinite(x) for pair in pairs for x in pair):
        return None
    return pairs


def _mcq_gold(task: Task) -> str:
    """``self.answer[0].strip().upper()`` of the dataset's own answer: the first character of
    a string (so an answer given as option text is its first letter, whatever option it is),
    the first entry of a list; the loaded letter when the record has no answer field."""
    raw = task.original.get("answer", task.answers.label)
    if isinstance(raw, list | tuple):
        return str(raw[0]).strip().upper() if raw else ""
    text = str(raw)
    return text[0].strip().upper() if text else ""


def release_reward(task: Task, kind: str, content: str) -> float | None:
    """The release's reward of ``content`` for ``task`` of base type ``kind``; ``None`` for a
    free-form (FF) question, which the release scores with an LLM (omnilab's judge then)."""
    gold = task.answers.label
    if kind == "MCQ":
        first = _mcq_gold(task)
        return 1.0 if first and content.strip().upper() == first else 0.0
    if kind == "TR":
        try:
            predicted = _spans(json.loads(content))
        except ValueError:
            return 0.0
        truth = list(task.metadata.spans or parse_spans(gold) or [])
        if predicted is None or any(s > e for s, e in predicted):
            return 0.0
        if not predicted and not truth:
            return 1.0
        return temporal_iou(predicted, truth) if predicted and truth else 0.0
    if kind in ("NUM", "SIZE"):
        truth_value, value = _first_number(gold), _first_number(content)
        if truth_value is None or value is None:
            return 0.0
        if kind == "NUM":
            return 1.0 if round(truth_value, 2) == round(value, 2) else 0.0
        return mean_relative_accuracy(value, truth_value)
    return None


class OmniAgentScorer:
    """OmniAgent's reward by question type (eq. 2): MCQ and NUM exact, TR by IoU, SIZE by MRA.

    ``rules="omnilab"`` (``omniagent``) reads answers with omnilab's scorers; ``rules="release"``
    (``omniagent-release``) scores as the release does (module docstring), correct above 0.5.
    Both verdicts are recorded for every type but FF, whose scorer records its own.

    A type with a dataset suffix (``MCQ_LongVR-Short``, ``TR_MultiHop``, ``SIZE_VSI``) is scored
    as its base type. FF (free-form) answers go to ``free_form`` (e.g. an
    :class:`~.judge.OmniGaiaScorer` with a judge); without one they are matched against the
    answer set.
    """

    def __init__(
        self, *, free_form: Scorer | None = None, rules: Literal["omnilab", "release"] = "omnilab"
    ) -> None:
        self.rules = rules
        self.name = "omniagent" if rules == "omnilab" else "omniagent-release"
        self.by_type: dict[str, Scorer] = {
            "MCQ": MultipleChoice(),
            "NUM": NumericMatch(abs_tol=0.0),
            "TR": TemporalIoU(),
            "SIZE": MeanRelativeAccuracy(),
        }
        self.free_form = free_form or AnswerSetMatch(require_tag=False)

    async def score(self, task: Task, prediction: str) -> Score:
        """Score with the scorer of the task's question type."""
        kind = base_question_type(task.metadata.task_type)
        mine = await self.by_type.get(kind, self.free_form).score(task, prediction)
        reward = release_reward(task, kind, prediction)
        if reward is None:
            return mine  # FF: the judge's verdicts, under both rule sets when it records them
        theirs = reward > CORRECT_ABOVE
        details = {**mine.details, "strict": float(bool(mine.correct)), "reference": float(theirs)}
        if self.rules == "omnilab":
            return mine.model_copy(update={"details": details})
        return mine.model_copy(
            update={
                "scorer": self.name,
                "value": reward,
                "correct": theirs,
                "details": details,
                "reason": f"{'right' if theirs else 'wrong'}: the release's reward is {reward:g} "
                f"(above {CORRECT_ABOVE:g} counts)",
            }
        )
