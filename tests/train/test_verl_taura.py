"""TAURA as a registered verl advantage estimator, called through verl's own lookup
(``get_adv_estimator_fn("taura")``) on small batches: hand-worked numbers, agreement with
omnilab's ``taura_advantages`` per turn and with verl's own GRPO (eq. 3) per rollout. Marked
``train``; skipped without verl."""

from __future__ import annotations

import math

import pytest

pytestmark = [pytest.mark.train]

verl_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")


def lookup() -> object:
    import omnilab.rl.verl_taura  # noqa: F401 -- registers "taura"

    return verl_algos.get_adv_estimator_fn("taura")


def test_registered_under_taura() -> None:
    from omnilab.rl.verl_taura import compute_taura_advantage

    assert lookup() is compute_taura_advantage


def test_hand_worked_group() -> None:
    # Row 0: turns at tokens 0-1 (entropy 1) and 3-4 (entropy 3), an observation at 2; reward 1.
    # Row 1: one turn at tokens 0-2 (entropy 2), padding after; reward 0.
    # Eq. 3: mean 0.5, sample std 1/sqrt(2): A = +-1/sqrt(2). Group mean turn entropy
    # (1 + 3 + 2) / 3 = 2: weights 0.5, 1.5 and 1.
    mask = torch.tensor([[1, 1, 0, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.float32)
    entropy = torch.tensor([[1.0, 1.0, 9.0, 3.0, 3.0], [2.0, 2.0, 2.0, 7.0, 7.0]])
    rewards = torch.zeros(2, 5)
    rewards[0, 4] = 1.0
    fn = lookup()
    adv, returns = fn(  # type: ignore[operator]
        token_level_rewards=rewards,
        response_mask=mask,
        index=np.array(["q", "q"], dtype=object),
        config=None,
        entropy=entropy,
    )
    a = 1 / math.sqrt(2)
    expected = torch.tensor(
        [[0.5 * a, 0.5 * a, 0.0, 1.5 * a, 1.5 * a], [-a, -a, -a, 0.0, 0.0]], dtype=torch.float32
    )
    assert torch.allclose(adv, expected, atol=1e-5)
    assert torch.equal(adv, returns)


def test_agrees_with_taura_advantages_and_verls_grpo() -> None:
    from omnilab.rl.rewards import taura_advantages
    from omnilab.rl.verl_taura import turn_spans

    gen = torch.Generator().manual_seed(7)
    rows, length = 7, 12
    mask = (torch.rand(rows, length, generator=gen) > 0.35).float()
    mask[:, 0] = 1.0
    entropy = torch.rand(rows, length, generator=gen) * 3
    rewards = torch.zeros(rows, length)
    scores = [1.0, 0.0, 0.5, 1.0, 0.0, 0.0, 1.0]
    for row, value in enumerate(scores):
        rewards[row, length - 1] = value
    index = np.array(["a", "b", "a", "a", "b", "c", "c"], dtype=object)
    adv, _ = lookup()(  # type: ignore[operator]
        token_level_rewards=rewards, response_mask=mask, index=index, entropy=entropy
    )
    grpo, _ = verl_algos.get_adv_estimator_fn("grpo")(
        token_level_rewards=rewards, response_mask=mask, index=index
    )
    for key in ("a", "b", "c"):
        members = [r for r in range(rows) if index[r] == key]
        spans = [turn_spans(mask[r]) for r in members]
        turns = [
            [float(entropy[r, a:b].mean()) for a, b in s]
            for r, s in zip(members, spans, strict=True)
        ]
        want = taura_advantages([scores[r] for r in members], turns)
        for r, s, values, weights in zip(
            members, spans, want.advantages, want.weights, strict=True
        ):
            for (a, b), value, weight in zip(s, values, weights, strict=True):
                assert torch.allclose(adv[r, a:b], torch.full((b - a,), value), atol=1e-5)
                # eq. 3's A_i is verl's own GRPO advantage for the row
                assert torch.allclose(adv[r, a:b], grpo[r, a:b] * weight, atol=1e-4)
    assert torch.all(adv[mask == 0] == 0)


def test_without_entropy_it_says_why() -> None:
    with pytest.raises(ValueError, match="entropy"):
        lookup()(  # type: ignore[operator]
            token_level_rewards=torch.zeros(2, 3),
            response_mask=torch.ones(2, 3),
            index=np.array(["q", "q"], dtype=object),
        )
