"""The :class:`Scorer` protocol, the :class:`Score` record and answer extraction.

Extraction and normalisation follow the OmniGAIA reference evaluation (``eval_results.py``):
the answer is the *last* ``<answer>...</answer>`` span; two answers match when they are equal
after lower-casing and collapsing whitespace. The extraction is the agents' own
(:mod:`omnilab.agents.answer`), so an answer an agent recorded is the answer a scorer reads.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from omnilab.agents.answer import extract_answer, final_answer
from omnilab.bench.task import Task

__all__ = [
    "JudgeCall",
    "Score",
    "Scorer",
    "Verdict",
    "answer_body",
    "extract_answer",
    "last_words",
    "matches_any",
    "normalize_answer",
]

Verdict = Literal["correct", "incorrect"]


class JudgeCall(BaseModel):
    """One judge's decision on one prediction, with every raw reply it gave."""

    judge: str
    """The judge model's name."""
    replies: list[str] = Field(default_factory=list)
    """The raw reply of each attempt, in order (kept for audit)."""
    verdict: Verdict | None = None
    """``None`` when no attempt gave a clear Correct or Incorrect, or the call failed."""
    error: str | None = None


class Score(BaseModel):
    """What a scorer decided about one prediction."""

    scorer: str
    value: float
    """1.0 or 0.0 for right/wrong scorers; IoU or MRA in [0, 1] for continuous ones."""
    correct: bool | None
    """The verdict counted by Pass@1 (for OmniGAIA: exact match or the judge's Correct);
    ``None`` when it could not be decided (judge error), which is not a wrong answer."""
    exact_match: bool | None = None
    """Normalised exact match, reported beside the judged verdict; ``None`` if not computed."""
    extracted: str | None = None
    """The answer the scorer read from the prediction (``<answer>`` span, letter, number, ...)."""
    judge_input: str | None = None
    """What the judges were shown as the predicted answer (e.g. the last 20 words)."""
    judges: list[JudgeCall] = Field(default_factory=list)
    error: str | None = None
    """Why ``correct`` is ``None``."""
    reason: str | None = None
    """The rule that decided, in words (``wrong: the reply has 36 words; at most 30 count``)."""
    details: dict[str, float | str | None] = Field(default_factory=dict)


@runtime_checkable
class Scorer(Protocol):
    """Scores a prediction (the agent's final output text) against a task's answers."""

    async def score(self, task: Task, prediction: str) -> Score:
        """The score of ``prediction`` for ``task``."""
        ...


def answer_body(prediction: str) -> str:
    """What rule-based scorers read: the answer an agent would record for this final message
    (:func:`~omnilab.agents.answer.final_answer`: the last ``<answer>`` span in any case, else
    the text after an unclosed ``<answer>``, else the whole message)."""
    answer, _ = final_answer(prediction)
    return answer or ""


def normalize_answer(text: str) -> str:
    """Lower case with runs of whitespace (newlines, tabs) collapsed to one space."""
    return " ".join(text.lower().split())


def matches_any(candidate: str, answers: tuple[str, ...]) -> bool:
    """Whether ``candidate`` equals one of ``answers`` after :func:`normalize_answer`."""
    norm = normalize_answer(candidate)
    return any(norm == normalize_answer(a) for a in answers)


def last_words(text: str, count: int = 20) -> str:
    """The last ``count`` whitespace-separated words of ``text``, joined by single spaces."""
    return " ".join(text.split()[-count:])
