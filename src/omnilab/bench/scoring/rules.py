"""Rule-based scorers: answer sets with aliases, numbers, temporal IoU, MRA, and OmniAgent's
base question type (its scorer is :mod:`.omniagent`).

Each reads the answer an agent would record (:func:`~.base.answer_body`: the ``<answer>`` span,
else the whole prediction), except :class:`AnswerSetMatch`, which by default needs the span (as
the verifiable-answer reward of the sandboxed coding-agent paper does). Numbers are read by
:mod:`.numbers` and spans by :mod:`.spans`, whose docstrings state the rules.
"""

from __future__ import annotations

import math

from omnilab.bench.scoring.base import Score, answer_body, extract_answer, matches_any
from omnilab.bench.scoring.numbers import extract_number, extract_quantity
from omnilab.bench.scoring.spans import merge_spans, parse_spans
from omnilab.bench.scoring.units import convert, expected_unit, unit_of
from omnilab.bench.task import Span, Task

__all__ = [
    "MRA_THRESHOLDS",
    "AnswerSetMatch",
    "MeanRelativeAccuracy",
    "NumericMatch",
    "TemporalIoU",
    "base_question_type",
    "label_tolerance",
    "mean_relative_accuracy",
    "temporal_iou",
]

MRA_THRESHOLDS: tuple[float, ...] = tuple(0.5 + 0.05 * i for i in range(10))
"""Confidence thresholds 0.50, 0.55, ..., 0.95 of Mean Relative Accuracy (OmniAgent eq. 2)."""


def base_question_type(value: str | None) -> str:
    """OmniAgent's base type of a question type: ``MCQ_LongVR-Short`` -> ``MCQ`` (its code's
    ``split("_", 1)[0].upper()``); no type is free-form (``FF``)."""
    return (value or "FF").strip().split("_", 1)[0].upper() or "FF"


class AnswerSetMatch:
    """Right when the answer equals the label or an alias after normalisation.

    ``require_tag`` (default): a prediction without an ``<answer>`` span is wrong.
    """

    name = "answer_set"

    def __init__(self, *, require_tag: bool = True) -> None:
        self.require_tag = require_tag

    async def score(self, task: Task, prediction: str) -> Score:
        """Exact match against every acceptable answer."""
        extracted = extract_answer(prediction)
        candidate = extracted if extracted is not None or self.require_tag else prediction.strip()
        correct = candidate is not None and matches_any(candidate, task.answers.all)
        if candidate is None:
            reason = f"wrong: no <answer> tag to read ({self.name} requires one)"
        elif correct:
            reason = "right: equals an acceptable answer (case and spacing ignored)"
        else:
            reason = "wrong: differs from every acceptable answer (case and spacing ignored)"
        return Score(
            reason=reason,
            scorer=self.name,
            value=1.0 if correct else 0.0,
            correct=correct,
            exact_match=correct,
            extracted=candidate,
        )


def label_tolerance(label: str) -> float:
    """Half a unit of the label's last digit: ``"12.5"`` -> 0.05, ``"790"`` -> 0.5.

    A prediction within it rounds to the label at the label's own precision. The label's number
    is the one :func:`~.numbers.extract_quantity` reads ("2 years, i.e. 2.5" -> 2.5).
    """
    quantity = extract_quantity(label)
    if quantity is None:
        return 0.0
    if "e" in quantity.text.lower() and any(c.isdigit() for c in quantity.text):
        return 0.0  # 1e-3: no digit-based precision
    return 0.5 * 10.0**-quantity.decimals


class NumericMatch:
    """Right when the predicted number is within tolerance of the label's; units are ignored.

    ``abs(pred - label) <= max(abs_tol, rel_tol * abs(label))``. ``abs_tol=None`` (default)
    means :func:`label_tolerance` (the label's precision); ``abs_tol=0`` with ``rel_tol=0`` asks
    for the exact number, as OmniAgent's NUM questions do.
    """

    name = "numeric"

    def __init__(self, *, rel_tol: float = 0.0, abs_tol: float | None = None) -> None:
        if rel_tol < 0 or (abs_tol is not None and abs_tol < 0):
            raise ValueError("tolerances must be >= 0")
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol

    async def score(self, task: Task, prediction: str) -> Score:
        """Parse both numbers and compare."""
        gold_text = next((a for a in task.answers.all if extract_number(a) is not None), None)
        if gold_text is None:
            raise ValueError(f"task {task.id}: answer {task.answers.label!r} holds no number")
        gold = extract_number(gold_text)
        assert gold is not None
        predicted = extract_number(answer_body(prediction))
        tol = label_tolerance(gold_text) if self.abs_tol is None else self.abs_tol
        tol = max(tol, self.rel_tol * abs(gold))
        correct = predicted is not None and abs(predicted - gold) <= tol + 1e-12 * max(
            1.0, abs(gold)
        )
        return Score(
            scorer=self.name,
            value=1.0 if correct else 0.0,
            correct=correct,
            exact_match=predicted is not None and predicted == gold,
            extracted=None if predicted is None else f"{predicted:g}",
            details={"expected": gold, "tolerance": tol},
        )


def temporal_iou(
    predicted: list[Span] | tuple[Span, ...], truth: list[Span] | tuple[Span, ...]
) -> float:
    """Intersection over union of two sets of spans, each merged first (0 when both are empty)."""
    a, b = merge_spans(predicted), merge_spans(truth)
    union = sum(e - s for s, e in a) + sum(e - s for s, e in b)
    inter = 0.0
    i = j = 0
    while i < len(a) and j < len(b):
        inter += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        # Advance the span that ends first; the other may still overlap the next one.
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    union -= inter
    return inter / union if union > 0 else 0.0


class TemporalIoU:
    """Temporal grounding: the score is the IoU of predicted and true spans (OmniAgent eq. 2).

    Spans are read as ``[[s, e], ...]``, ``[s, e]`` or text such as ``12.5s - 20s``; overlapping
    spans are merged on both sides. ``correct`` is ``IoU >= threshold`` (0.5, the criterion
    OmniAgent's data filter uses).
    """

    name = "temporal_iou"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    async def score(self, task: Task, prediction: str) -> Score:
        """IoU of the predicted spans with the task's spans."""
        truth = task.metadata.spans or parse_spans(task.answers.label)
        if not truth:
            raise ValueError(f"task {task.id}: no ground-truth spans")
        predicted = parse_spans(answer_body(prediction))
        iou = temporal_iou(predicted, truth) if predicted else 0.0
        return Score(
            scorer=self.name,
            value=iou,
            correct=iou >= self.threshold,
            extracted=None if predicted is None else str([list(s) for s in predicted]),
            details={"iou": iou},
        )


def mean_relative_accuracy(
    predicted: float, truth: float, thresholds: tuple[float, ...] = MRA_THRESHOLDS
) -> float:
    """MRA: the share of thresholds t with ``|pred - truth| / |truth| < 1 - t``.

    With ``truth == 0`` the relative error is 0 for an exact prediction and infinite otherwise.
    """
    if truth == 0:
        error = 0.0 if predicted == 0 else math.inf
    else:
        error = abs(predicted - truth) / abs(truth)
    # round() keeps 1 - 0.95 at 0.05 instead of 0.050000000000000044.
    return sum(error < round(1.0 - t, 10) for t in thresholds) / len(thresholds)


class MeanRelativeAccuracy:
    """Size estimation: the score is MRA over thresholds 0.50..0.95 (OmniAgent eq. 2).

    ``correct`` is ``MRA >= threshold`` (0.5, OmniAgent's data-filter criterion). Units are
    kept: the unit the task asks for (its ``unit`` attribute, else the question's "(in square
    meters)", else the label's own unit) is the one a prediction is converted to, so
    ``"150 cm"`` scores as 1.5 for a question in meters; an unknown or unrelated unit is read
    as written.
    """

    name = "mra"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    async def score(self, task: Task, prediction: str) -> Score:
        """MRA of the predicted number against the label."""
        label = extract_quantity(task.answers.label)
        if label is None:
            raise ValueError(f"task {task.id}: answer {task.answers.label!r} holds no number")
        asked = task.metadata.attributes.get("unit")
        unit = (unit_of(asked) if asked else None) or expected_unit(task.question) or label.unit
        truth = convert(label, unit)
        quantity = extract_quantity(answer_body(prediction))
        predicted = None if quantity is None else convert(quantity, unit)
        value = 0.0 if predicted is None else mean_relative_accuracy(predicted, truth)
        return Score(
            scorer=self.name,
            value=value,
            correct=value >= self.threshold,
            extracted=None if predicted is None else f"{predicted:g}",
            details={"mra": value, "expected": truth, "unit": unit},
        )
