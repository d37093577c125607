"""Group-relative advantages (GRPO, GSPO) and OmniAgent's turn-level TAURA advantages.

Pure arithmetic on rewards and entropies, no files: :mod:`omnilab.train.groups` feeds it the
groups of a run (the samples of ``--samples G``) and writes what it returns.

- GRPO (DeepSeekMath; the reference implementation verl's ``compute_grpo_outcome_advantage``):
  ``A_i = (R_i - mean(R)) / (std(R) + eps)``, with the *sample* standard deviation (``n - 1``;
  verl calls ``torch.std``, which is unbiased) and ``eps = 1e-6`` unless told otherwise.
- GSPO as Code-X trains it (§3.2, Table 10): the same normalisation with ``eps_A = 1e-6``,
  a sequence-level advantage (every token of a trajectory gets ``A_i``), and the group
  mechanisms it lists: removed rollouts (timeout, step limit, ...) are left out of the group
  statistics (active-only baseline), groups whose active rewards all agree are dropped
  (zero-variance masking) and so are groups with at most one active rollout (dynamic filter).
- TAURA (OmniAgent §3.3, eq. 3-4): ``Â_{i,k} = A_i · H_{i,k} / ((1/N_G) Σ_j Σ_m H_{j,m})``, the
  trajectory advantage of eq. 3 rescaled by the turn's mean token entropy over the group's mean
  turn entropy. The paper clips nothing here; eq. 6's clip acts on the importance ratio, in the
  trainer.

Token entropy comes from the top-k alternatives a provider returns (``top_logprobs``); the full
distribution is unknown, so :func:`token_entropy` states which approximation it makes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, assert_never

from omnilab.models.types import TokenLogprob

__all__ = [
    "ENTROPY_METHODS",
    "EPS",
    "EntropyMethod",
    "GroupStats",
    "StdKind",
    "TauraTurns",
    "group_advantages",
    "gspo_advantages",
    "mean_entropy",
    "taura_turns",
    "token_entropy",
]

EPS = 1e-6
"""The stabiliser of the normalisation (verl's ``epsilon``; Code-X's ``eps_A``, Table 10)."""

StdKind = Literal["sample", "population"]
EntropyMethod = Literal["renormalized", "remainder", "surprisal"]

ENTROPY_METHODS: dict[str, str] = {
    "renormalized": "top-k renormalised: the returned top-k alternatives (plus the sampled token "
    "when it is not among them) rescaled to sum to 1, H = -sum p log p; exact when the top-k "
    "hold all the mass, else a lower bound (the tail's spread is unknown)",
    "remainder": "top-k plus a remainder bucket: the top-k alternatives (plus the sampled token) "
    "as they are and the missing mass 1 - sum p as one more outcome, H = -sum p log p; exact "
    "when the top-k hold all the mass, else a lower bound (the bucket hides the tail's spread)",
    "surprisal": "sampled-token surprisal: -log p of the token the model produced, an unbiased "
    "one-sample estimate of the entropy when the token was sampled from the policy at "
    "temperature 1 (needs no top_logprobs)",
}
"""How each entropy method approximates a token's entropy (written into the export's metadata)."""


def _alternatives(token: TokenLogprob) -> list[float]:
    """Log probabilities of the top-k alternatives, the sampled token added when it is missing
    (providers list the top k, which need not hold a sampled token)."""
    found = {alt.token: alt.logprob for alt in token.top_logprobs}
    found.setdefault(token.token, token.logprob)
    return list(found.values())


def token_entropy(token: TokenLogprob, method: EntropyMethod = "renormalized") -> float:
    """The entropy (nats) of the distribution ``token`` was drawn from, by ``method`` (see
    :data:`ENTROPY_METHODS`). Raises :class:`ValueError` when a top-k method gets a token
    without alternatives (the call was made without ``top_logprobs``)."""
    if method == "surprisal":
        return -token.logprob
    if not token.top_logprobs:
        raise ValueError("no top_logprobs")
    probs = [math.exp(lp) for lp in _alternatives(token)]
    if method == "renormalized":
        total = sum(probs)
        probs = [p / total for p in probs]
    elif method == "remainder":
        # Rounding in the provider can push the sum a hair over 1: no negative bucket.
        probs = [*probs, max(0.0, 1.0 - sum(probs))]
    else:
        assert_never(method)
    return -sum(p * math.log(p) for p in probs if p > 0.0)


def mean_entropy(tokens: Sequence[TokenLogprob], method: EntropyMethod = "renormalized") -> float:
    """``H_{i,k}``: the mean token entropy of one turn's generated tokens (0 for no tokens)."""
    if not tokens:
        return 0.0
    return sum(token_entropy(t, method) for t in tokens) / len(tokens)


@dataclass(frozen=True)
class GroupStats:
    """The advantages of one group and the statistics they came from."""

    advantages: list[float]
    """One per rollout, in order; 0 for removed rollouts and for dropped groups."""
    mean: float
    std: float
    active: int
    """Rollouts that entered the statistics."""
    dropped: str | None = None
    """Why the whole group is left out of training (``zero-variance``, ``<=1 active``)."""


def _std(values: Sequence[float], kind: StdKind) -> float:
    # statistics' exact sums (and mean() below): an all-equal group has spread 0, not a rounding residue.
    if len(values) < 2:
        return 0.0
    if kind == "sample":
        return statistics.stdev(values)
    if kind == "population":
        return statistics.pstdev(values)
    assert_never(kind)


def group_advantages(
    rewards: Sequence[float], *, std: StdKind = "sample", eps: float = EPS
) -> GroupStats:
    """GRPO's ``A_i = (R_i - mean) / (std + eps)`` (OmniAgent eq. 3 adds ``eps`` against an
    all-equal group). A group of one has no spread: its advantage is 0, not verl's ``R_i``."""
    if not rewards:
        return GroupStats([], 0.0, 0.0, 0)
    mean = statistics.mean(rewards)
    if len(rewards) == 1:
        return GroupStats([0.0], mean, 0.0, 1)
    spread = _std(rewards, std)
    return GroupStats([(r - mean) / (spread + eps) for r in rewards], mean, spread, len(rewards))


def gspo_advantages(
    rewards: Sequence[float],
    removed: Sequence[bool],
    *,
    std: StdKind = "sample",
    eps: float = EPS,
) -> GroupStats:
    """Code-X's GSPO group advantages: the GRPO normalisation over the active rollouts only;
    the group is dropped (all advantages 0) when at most one rollout is active or the active
    rewards do not vary (spread below ``eps``, the "near-zero variance" of its dynamic filter)."""
    active = [r for r, gone in zip(rewards, removed, strict=True) if not gone]
    zeros = [0.0] * len(rewards)
    if len(active) <= 1:
        mean = active[0] if active else 0.0
        return GroupStats(zeros, mean, 0.0, len(active), dropped="<=1 active")
    mean = statistics.mean(active)
    spread = _std(active, std)
    if spread < eps:
        return GroupStats(zeros, mean, spread, len(active), dropped="zero-variance")
    advantages = [
        0.0 if gone else (r - mean) / (spread + eps)
        for r, gone in zip(rewards, removed, strict=True)
    ]
    return GroupStats(advantages, mean, spread, len(active))


@dataclass(frozen=True)
class TauraTurns:
    """TAURA's turn weights and advantages for one group."""

    weights: list[list[float]]
    """``w_{i,k} = H_{i,k} / mean turn entropy of the group``, per trajectory and turn."""
    advantages: list[list[float]]
    """``Â_{i,k} = A_i · w_{i,k}``."""
    group_entropy: float
    """The group's mean turn entropy ``(1/N_G) Σ_j Σ_m H_{j,m}`` over the turns that have one."""
    uniform: bool = False
    """True when the group's mean turn entropy is 0 (every turn certain): the weights are
    undefined there, and every turn gets weight 1 (plain GRPO)."""


def taura_turns(
    advantages: Sequence[float], entropies: Sequence[Sequence[float | None]]
) -> TauraTurns:
    """OmniAgent eq. 4 for one group: ``advantages[i]`` is ``A_i`` (eq. 3) and
    ``entropies[i][k]`` is ``H_{i,k}``; a turn whose entropy is ``None`` (no logprobs, allowed
    only when the caller says so) gets weight 1 and stays out of the group mean."""
    known = [h for turns in entropies for h in turns if h is not None]
    group = sum(known) / len(known) if known else 0.0
    uniform = group <= 0.0
    weights = [[1.0 if uniform or h is None else h / group for h in turns] for turns in entropies]
    scaled = [
        [a * w for w in turn_weights] for a, turn_weights in zip(advantages, weights, strict=True)
    ]
    return TauraTurns(weights, scaled, group, uniform)
