"""Scorers: one async method ``score(task, prediction) -> Score``.

* :class:`OmniGaiaScorer` — OmniGAIA's protocol: ``<answer>`` exact match, else an LLM judge
  (prompt B.1) on the last 20 words; :class:`MajorityVote` — several judges (Omni-DeepSearch).
* :class:`MultipleChoice`, :class:`NumericMatch`, :class:`TemporalIoU`,
  :class:`MeanRelativeAccuracy`, :class:`AnswerSetMatch`, and :class:`OmniAgentScorer`, which
  picks one of them by question type.
* The reading rules they share: :func:`extract_answer` / :func:`answer_body` (the agents' own),
  :func:`extract_number` / :func:`extract_quantity` (numbers, units) and :func:`parse_spans`.
"""

from __future__ import annotations

from omnilab.bench.scoring.base import (
    JudgeCall,
    Score,
    Scorer,
    Verdict,
    answer_body,
    extract_answer,
    last_words,
    matches_any,
    normalize_answer,
)
from omnilab.bench.scoring.choice import MultipleChoice, extract_choice
from omnilab.bench.scoring.judge import LLMJudge, MajorityVote, OmniGaiaScorer, parse_verdict
from omnilab.bench.scoring.numbers import extract_number, extract_quantity
from omnilab.bench.scoring.omniagent import OmniAgentScorer
from omnilab.bench.scoring.rules import (
    MRA_THRESHOLDS,
    AnswerSetMatch,
    MeanRelativeAccuracy,
    NumericMatch,
    TemporalIoU,
    base_question_type,
    label_tolerance,
    mean_relative_accuracy,
    temporal_iou,
)
from omnilab.bench.scoring.spans import merge_spans, parse_spans, parse_time
from omnilab.bench.scoring.units import Quantity, convert, expected_unit

__all__ = [
    "MRA_THRESHOLDS",
    "AnswerSetMatch",
    "JudgeCall",
    "LLMJudge",
    "MajorityVote",
    "MeanRelativeAccuracy",
    "MultipleChoice",
    "NumericMatch",
    "OmniAgentScorer",
    "OmniGaiaScorer",
    "Quantity",
    "Score",
    "Scorer",
    "TemporalIoU",
    "Verdict",
    "answer_body",
    "base_question_type",
    "convert",
    "expected_unit",
    "extract_answer",
    "extract_choice",
    "extract_number",
    "extract_quantity",
    "label_tolerance",
    "last_words",
    "matches_any",
    "mean_relative_accuracy",
    "merge_spans",
    "normalize_answer",
    "parse_spans",
    "parse_time",
    "parse_verdict",
    "temporal_iou",
]
