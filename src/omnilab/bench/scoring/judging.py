"""Scoring rules of the judged benchmarks: omnilab's strict ones, and the authors' reference ones.

OmniGAIA's released evaluation (``src/evaluate/eval_results.py`` of RUC-NLPIR/OmniGAIA) differs
from omnilab's default in three choices, each a setting here:

- ``judge_input``: what the judge sees as the predicted answer. ``last-words`` (default): the
  last 20 words of the whole final message when exact match fails, as the paper's text
  (Appendix A.2) says. ``answer-span``: the released code: the last ``<answer>`` span, and the
  last 20 words only when there is no tag (51 of the 360 labels are longer than 20 words).
- ``verdict``: ``strict`` (default): a verdict counts only when the reply is exactly Correct or
  Incorrect, else it is asked again and finally recorded as undecided. ``reference``: the released
  code: the text after the last ``</think>``; any reply without the word "Incorrect" (case as
  written) is correct, and a judge that fails three times is wrong.
- ``em_untagged``: exact match also on the last 20 words when there is no tag (the released code
  does; default off: an untagged message is not an exact answer).
- ``case_sensitive_tag``: only ``<answer>`` as written is a tag (the released code's pattern has
  no IGNORECASE; default off: ``<Answer>`` is a tag too, since a model that capitalises it
  still answered).

The strict rules stay the default because the reference rules count a rambling or truncated
judge reply as a right answer. Both verdicts are recorded for each task where one judge reply
allows it (``Score.details["strict"]`` / ``["reference"]``), so ``omnilab metrics`` shows Pass@1
under both rules side by side without asking the judge again.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnilab.bench.scoring.base import Verdict, extract_answer, last_words, matches_any
from omnilab.models import GenerateConfig

__all__ = [
    "REFERENCE_RULES",
    "STRICT_RULES",
    "JudgeInput",
    "ScoringRules",
    "VerdictRule",
    "em_candidate",
    "judge_input",
    "offline_verdict",
    "reference_verdict",
]

JudgeInput = Literal["last-words", "answer-span"]
VerdictRule = Literal["strict", "reference"]


class ScoringRules(BaseModel):
    """How a judged scorer reads a prediction and a judge's reply (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_input: JudgeInput = "last-words"
    verdict: VerdictRule = "strict"
    em_untagged: bool = False
    case_sensitive_tag: bool = False
    words: int = Field(default=20, ge=1)
    """How many last words stand for an untagged message."""
    judge_generate: GenerateConfig | None = None
    """The judge's sampling settings; ``None``: temperature 0 (a cached verdict is the verdict
    the judge would give again). The reference uses the server's default temperature,
    ``max_tokens`` 40960 and thinking off (``chat_template_kwargs``)."""


STRICT_RULES = ScoringRules()
"""omnilab's default rules."""

REFERENCE_RULES = ScoringRules(
    judge_input="answer-span",
    verdict="reference",
    em_untagged=True,
    case_sensitive_tag=True,
    judge_generate=GenerateConfig(
        max_tokens=40960, extra_body={"chat_template_kwargs": {"thinking": False}}
    ),
)
"""The OmniGAIA authors' released evaluation (``eval_results.py``)."""


def judge_input(prediction: str, rules: ScoringRules) -> str:
    """What the judge is shown as the predicted answer under ``rules``."""
    if rules.judge_input == "answer-span":
        span = extract_answer(prediction, case_sensitive=rules.case_sensitive_tag)
        if span is not None:
            return span
    return last_words(prediction, rules.words)


def em_candidate(prediction: str, rules: ScoringRules) -> str | None:
    """What exact match compares with the labels: the ``<answer>`` span, or with
    ``em_untagged`` the last words of an untagged message; ``None``: no exact match possible."""
    span = extract_answer(prediction, case_sensitive=rules.case_sensitive_tag)
    if span is not None:
        return span
    return last_words(prediction, rules.words) if rules.em_untagged else None


def reference_verdict(reply: str) -> Verdict:
    """The released code's reading of one judge reply: the text after the last ``</think>``;
    "Incorrect" anywhere in it (case as written) is incorrect, anything else correct."""
    content = reply.split("</think>")[-1] if "</think>" in reply else reply
    return "incorrect" if "Incorrect" in content else "correct"


def offline_verdict(
    prediction: str,
    answers: tuple[str, ...],
    rules: ScoringRules,
    *,
    asked: str | None,
    first_reply: str | None,
    strict_verdict: Verdict | None,
) -> bool | None:
    """The verdict ``rules`` give, from one judge call already made on ``asked`` (its first
    reply, and the strict reading of all its replies); ``None`` when these rules would have shown
    the judge something else, so only a new call could tell."""
    candidate = em_candidate(prediction, rules)
    if candidate is not None and matches_any(candidate, answers):
        return True
    shown = judge_input(prediction, rules)
    if not shown.strip():
        return False
    if asked is None or shown != asked:
        return None
    if rules.verdict == "reference":
        # No reply at all: the reference gives up after its retries and counts it wrong.
        return first_reply is not None and reference_verdict(first_reply) == "correct"
    return None if strict_verdict is None else strict_verdict == "correct"
