"""The group-level length penalty of Code-X (papers/001, Table 10: alpha 0.2, f_min 0.5).

Table 10 names the constants; the rule is the authors' released grader's
(Dongping-Chen/OmniCoding ``src/omnicoding/rl/reward.py``, ``apply_length_penalty``): among the
sibling rollouts of one task, the *references* are those that are not removed, gated-correct,
modality-engaged and made at least one tool call; ``s*`` is the fewest steps of a reference (at
least 1). Every gated-correct, non-removed rollout's reward is multiplied by
``max(f_min, 1 - alpha * (steps - s*) / s*)``; the others keep theirs. A group without a
reference is left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omnilab.bench.scoring.code_x_rules import LENGTH_PENALTY

__all__ = ["Rollout", "length_factors"]


@dataclass(frozen=True)
class Rollout:
    """What the length penalty reads of one rollout's ``code-x-reward`` score."""

    correct: bool
    """Gated-correct."""
    removed: bool
    modality_match: bool
    n_tool: int
    steps: int
    """Agent steps (model calls) of the rollout."""


def length_factors(
    group: Sequence[Rollout],
    *,
    alpha: float = LENGTH_PENALTY["alpha"],
    f_min: float = LENGTH_PENALTY["f_min"],
) -> list[float]:
    """The factor each rollout's reward is multiplied by (1.0 where the rule does not apply)."""
    refs = [r for r in group if not r.removed and r.correct and r.modality_match and r.n_tool > 0]
    if not refs:
        return [1.0] * len(group)
    best = max(min(max(r.steps, 1) for r in refs), 1)
    return [
        max(f_min, 1.0 - alpha * (max(r.steps, 1) - best) / best)
        if r.correct and not r.removed
        else 1.0
        for r in group
    ]
