"""Scorers by name (``--scorer``), each with how many judges it takes.

A package adds a scorer through the entry-point group ``omnilab.scorers``, naming a
:class:`ScorerEntry`, a :class:`~omnilab.bench.scoring.Scorer` object, or a class whose
instances are scorers (built with no arguments, no judges).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from omnilab.bench.errors import BenchError
from omnilab.bench.scoring.base import Scorer
from omnilab.bench.scoring.choice import MultipleChoice
from omnilab.bench.scoring.contains import AnswerInReply
from omnilab.bench.scoring.judge import MajorityVote, OmniGaiaScorer
from omnilab.bench.scoring.judging import ScoringRules
from omnilab.bench.scoring.omniagent import OmniAgentScorer
from omnilab.bench.scoring.omniagent_ff import OmniAgentFreeForm
from omnilab.bench.scoring.rules import (
    AnswerSetMatch,
    MeanRelativeAccuracy,
    NumericMatch,
    TemporalIoU,
)
from omnilab.models.model import Model
from omnilab.registry import Registry

__all__ = ["SCORERS", "JudgeUse", "ScorerEntry"]


JudgeUse = Literal["none", "optional", "one", "several"]
"""``none``: takes no judge; ``optional``: at most one; ``one``: exactly one; ``several``: a
panel of one or more."""


@dataclass(frozen=True)
class ScorerEntry:
    """How to build one scorer from its judges (models bound to role ``judge``).

    ``with_rules`` builds it under explicit :class:`ScoringRules` (judge input, verdict
    reading, exact match on untagged text); scorers without it take none."""

    build: Callable[[Sequence[Model]], Scorer]
    judges: JudgeUse = "none"
    with_rules: Callable[[Sequence[Model], ScoringRules], Scorer] | None = None


def _no_judges(make: Callable[[], Scorer]) -> ScorerEntry:
    return ScorerEntry(lambda judges: make())


def _process_judge(judges: Sequence[Model]) -> Scorer:
    # Imported here, like the other code-x scorers (string entries below): the terminal-task
    # scorer pulls in the sandbox, ctypes and numpy, ~0.1 s of every `omnilab eval` start.
    from omnilab.bench.scoring.code_x_process import ProcessJudge

    return ProcessJudge(judges[0])


def _terminal_tasks(judges: Sequence[Model]) -> Scorer:
    from omnilab.bench.scoring.code_x_tasks import TerminalTaskScorer

    return TerminalTaskScorer(judges[0] if judges else None)


def _as_entry(value: Any) -> ScorerEntry:
    if isinstance(value, ScorerEntry):
        return value
    if isinstance(value, Scorer) and not inspect.isclass(value):
        return ScorerEntry(lambda judges: value)
    if callable(value):
        return _no_judges(value)
    raise TypeError(f"expected a ScorerEntry, a Scorer or a Scorer class, got {value!r}")


SCORERS: Registry[ScorerEntry] = Registry(
    "scorer",
    group="omnilab.scorers",
    entries={
        "omnigaia": ScorerEntry(
            lambda judges: OmniGaiaScorer(judges[0]),
            "one",
            with_rules=lambda judges, rules: OmniGaiaScorer(judges[0], rules=rules),
        ),
        "majority_vote": ScorerEntry(lambda judges: MajorityVote(list(judges)), "several"),
        "omniagent": ScorerEntry(
            lambda judges: OmniAgentScorer(free_form=OmniGaiaScorer(judges[0]) if judges else None),
            "optional",
        ),
        "omniagent-release": ScorerEntry(
            lambda judges: OmniAgentScorer(
                free_form=OmniAgentFreeForm(judges[0]) if judges else None, rules="release"
            ),
            "optional",
        ),
        "mcq": _no_judges(MultipleChoice),
        "answer_set": _no_judges(AnswerSetMatch),
        "answer_in_reply": _no_judges(AnswerInReply),
        "numeric": _no_judges(NumericMatch),
        "temporal_iou": _no_judges(TemporalIoU),
        "mra": _no_judges(MeanRelativeAccuracy),
        # A class named by string: imported on first lookup, made with no judges (_as_entry).
        "code-x-reward": "omnilab.bench.scoring.code_x:CodeXReward",
        "code-x-process": ScorerEntry(_process_judge, "one"),
        "terminal-tasks": ScorerEntry(_terminal_tasks, "optional"),
    },
    error=BenchError,
    coerce=_as_entry,
)
"""Every scorer by name."""
