"""OmniAgent's TAURA as a verl advantage estimator: ``algorithm.adv_estimator=taura``.

Importing this module registers :func:`compute_taura_advantage` under ``"taura"`` with verl's
``register_adv_est`` (verl 0.9.1), so ``verl.trainer.ppo.core_algos.get_adv_estimator_fn("taura")``
finds it. What it computes is :func:`omnilab.rl.rewards.taura_advantages` (OmniAgent §3.3,
eq. 3-4) on verl's tensors:

- a row of the batch is one rollout (an omnilab agent loop's whole multi-turn sequence), its
  reward the sum of ``token_level_rewards``, its group verl's ``index`` (the ``uid`` of the
  prompt): eq. 3's ``A_i`` is the group-normalised reward (sample std, ``epsilon``);
- the turns of a row are the maximal runs of ``response_mask == 1`` (the sampled tokens of one
  model call; tool observations and template tokens are 0 between them), and ``H_{i,k}`` is the
  mean of ``entropy`` over turn ``k``'s tokens; the released trainer
  (``verl/trainer/ppo/core_algos.py: get_entropy_weights``) stores one turn per row and takes the
  entropy verl's actor recomputes with the log-probs (``entropys``), which is what ``entropy``
  here must be (shape ``(B, L)`` like ``response_mask``);
- every token of turn ``k`` gets ``Â_{i,k} = A_i · H_{i,k} / mean turn entropy of the group``.

verl 0.9.1's ``compute_advantage`` passes a registered estimator only ``token_level_rewards``,
``response_mask``, ``config`` and ``index`` (the legacy trainer pops ``entropys`` after its
metric; the v1 trainer keeps ``entropy`` in its TransferQueue but ``_compute_advantage`` does not
fetch it). A trainer therefore has to hand the recomputed entropy in as ``entropy=``; called
without it the estimator stops with that explanation instead of silently training plain GRPO.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch
from verl.trainer.ppo.core_algos import register_adv_est

from omnilab.rl.rewards import taura_advantages

__all__ = ["TAURA", "compute_taura_advantage", "turn_spans"]

TAURA = "taura"
"""The name the estimator is registered under (``algorithm.adv_estimator=taura``)."""

_NO_ENTROPY = (
    "the taura advantage estimator needs the actor's per-token entropy (entropy=, shape like "
    "response_mask); verl 0.9.1's compute_advantage does not pass it to registered estimators, "
    "so the trainer must (see docs/training.md, 'TAURA in verl')"
)


def turn_spans(mask_row: torch.Tensor) -> list[tuple[int, int]]:
    """The ``[start, end)`` token spans of the turns of one row: the maximal runs of 1."""
    spans: list[tuple[int, int]] = []
    start = -1
    for pos, bit in enumerate(mask_row.tolist()):
        if bit and start < 0:
            start = pos
        elif not bit and start >= 0:
            spans.append((start, pos))
            start = -1
    if start >= 0:
        spans.append((start, len(mask_row)))
    return spans


@register_adv_est(TAURA)  # type: ignore[untyped-decorator]
def compute_taura_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray[Any, Any],
    epsilon: float = 1e-6,
    config: Any = None,
    entropy: torch.Tensor | None = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's estimator signature: ``(advantages, returns)``, both ``(B, L)`` and equal (as
    verl's GRPO returns them), 0 outside ``response_mask``."""
    if entropy is None:
        raise ValueError(_NO_ENTROPY)
    if entropy.shape != response_mask.shape:
        raise ValueError(
            f"entropy has shape {tuple(entropy.shape)}, response_mask {tuple(response_mask.shape)}"
        )
    if config is not None and not config.get("norm_adv_by_std_in_grpo", True):
        raise ValueError("TAURA's eq. 3 normalises by the group's std: norm_adv_by_std_in_grpo")
    scores = token_level_rewards.sum(dim=-1).tolist()
    groups: dict[Any, list[int]] = defaultdict(list)
    for row, key in enumerate(index):
        groups[key].append(row)
    advantages = torch.zeros_like(token_level_rewards)
    for rows in groups.values():
        spans = [turn_spans(response_mask[row]) for row in rows]
        turns = [
            [float(entropy[row, a:b].float().mean()) for a, b in row_spans]
            for row, row_spans in zip(rows, spans, strict=True)
        ]
        if len(rows) == 1:  # no group to compare with: 0, as omnilab's group_advantages
            continue
        found = taura_advantages([scores[row] for row in rows], turns, eps=epsilon)
        for row, row_spans, values in zip(rows, spans, found.advantages, strict=True):
            for (a, b), value in zip(row_spans, values, strict=True):
                advantages[row, a:b] = value
    advantages = advantages * response_mask
    return advantages, advantages
