"""Scorers: one async method ``score(task, prediction) -> Score``.

* :class:`OmniGaiaScorer` — OmniGAIA's protocol: ``<answer>`` exact match, else an LLM judge
  (prompt B.1) on the last 20 words; :class:`MajorityVote` — several judges (Omni-DeepSearch).
* :class:`MultipleChoice`, :class:`NumericMatch`, :class:`TemporalIoU`,
  :class:`MeanRelativeAccuracy`, :class:`AnswerSetMatch`, and :class:`OmniAgentScorer`, which
  picks one of them by question type.
"""

from __future__ import annotations

from omnilab.bench.scoring.base import (
    JudgeCall,
    Score,
    Scorer,
    Verdict,
    extract_answer,
    last_words,
    matches_any,
    normalize_answer,
)
from omnilab.bench.scoring.choice import MultipleChoice, extract_choice
from omnilab.bench.scoring.judge import LLMJudge, MajorityVote, OmniGaiaScorer, parse_verdict
from omnilab.bench.scoring.rules import (
    MRA_THRESHOLDS,
    AnswerSetMatch,
    MeanRelativeAccuracy,
    NumericMatch,
    OmniAgentScorer,
    TemporalIoU,
    label_tolerance,
    mean_relative_accuracy,
    temporal_iou,
)

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
    "Score",
    "Scorer",
    "TemporalIoU",
    "Verdict",
    "extract_answer",
    "extract_choice",
    "label_tolerance",
    "last_words",
    "matches_any",
    "mean_relative_accuracy",
    "normalize_answer",
    "parse_verdict",
    "temporal_iou",
]
