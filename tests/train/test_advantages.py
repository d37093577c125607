"""Group advantages and TAURA, checked against numbers worked out by hand in each test."""

from __future__ import annotations

import math

import pytest

from omnilab.models.types import TokenLogprob, TopLogprob
from omnilab.train.advantages import (
    group_advantages,
    gspo_advantages,
    mean_entropy,
    taura_turns,
    token_entropy,
)


def tok(p: float, *alts: tuple[str, float], token: str = "a") -> TokenLogprob:
    """A sampled token of probability ``p`` with alternatives ``(token, probability)``."""
    return TokenLogprob(
        token=token,
        logprob=math.log(p),
        top_logprobs=[TopLogprob(token=t, logprob=math.log(q)) for t, q in alts],
    )


def test_renormalized_entropy_of_two_even_alternatives_is_ln2() -> None:
    assert token_entropy(tok(0.5, ("a", 0.5), ("b", 0.5))) == pytest.approx(math.log(2))


def test_renormalized_and_remainder_differ_when_the_top_k_miss_mass() -> None:
    token = tok(0.5, ("a", 0.5), ("b", 0.25))
    # Renormalised: p = (2/3, 1/3).
    by_hand = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert token_entropy(token, "renormalized") == pytest.approx(by_hand)
    # Remainder: (0.5, 0.25) and a bucket of 0.25 -> 0.5 ln 2 + 2 * 0.25 ln 4 = 1.5 ln 2.
    assert token_entropy(token, "remainder") == pytest.approx(1.5 * math.log(2))


def test_a_sampled_token_outside_the_top_k_joins_the_alternatives() -> None:
    token = tok(0.1, ("b", 0.6), ("c", 0.3), token="x")
    by_hand = -(0.6 * math.log(0.6) + 0.3 * math.log(0.3) + 0.1 * math.log(0.1))
    assert token_entropy(token) == pytest.approx(by_hand)


def test_surprisal_needs_no_alternatives_and_top_k_methods_refuse_without_them() -> None:
    bare = TokenLogprob(token="a", logprob=math.log(0.25))
    assert token_entropy(bare, "surprisal") == pytest.approx(math.log(4))
    with pytest.raises(ValueError, match="top_logprobs"):
        token_entropy(bare, "renormalized")


def test_mean_entropy_is_the_mean_over_the_turns_tokens() -> None:
    certain = tok(1.0, ("a", 1.0))
    even = tok(0.5, ("a", 0.5), ("b", 0.5))
    assert mean_entropy([certain, even, even, certain]) == pytest.approx(math.log(2) / 2)
    assert mean_entropy([]) == 0.0


def test_grpo_on_known_rewards_uses_the_sample_std_by_default() -> None:
    # mean 0.5; sample std sqrt(4 * 0.25 / 3) = 1/sqrt(3); population std 0.5.
    stats = group_advantages([1.0, 0.0, 1.0, 0.0])
    assert stats.mean == 0.5 and stats.std == pytest.approx(1 / math.sqrt(3))
    half = 0.5 / (1 / math.sqrt(3) + 1e-6)
    assert stats.advantages == pytest.approx([half, -half, half, -half], abs=1e-12)
    population = group_advantages([1.0, 0.0, 1.0, 0.0], std="population", eps=0.0)
    assert population.advantages == pytest.approx([1.0, -1.0, 1.0, -1.0])


def test_grpo_equal_rewards_and_a_group_of_one_give_zero() -> None:
    assert group_advantages([0.7, 0.7, 0.7]).advantages == [0.0, 0.0, 0.0]
    assert group_advantages([1.0]).advantages == [0.0]


def test_gspo_leaves_removed_rollouts_out_of_the_statistics() -> None:
    stats = gspo_advantages([1.0, 0.0, 0.2, 0.0], [False, False, False, True], eps=0.0)
    # Active (1, 0, 0.2): mean 0.4, sample std sqrt((0.36 + 0.16 + 0.04) / 2) = sqrt(0.28).
    spread = math.sqrt(0.28)
    assert stats.active == 3 and stats.mean == pytest.approx(0.4)
    assert stats.advantages == pytest.approx([0.6 / spread, -0.4 / spread, -0.2 / spread, 0.0])
    assert stats.dropped is None


def test_gspo_drops_zero_variance_and_single_active_groups() -> None:
    same = gspo_advantages([1.0, 1.0, 1.0], [False, False, False])
    assert same.dropped == "zero-variance" and same.advantages == [0.0, 0.0, 0.0]
    alone = gspo_advantages([1.0, 0.0], [False, True])
    assert alone.dropped == "<=1 active" and alone.advantages == [0.0, 0.0]


def test_taura_on_a_hand_made_group() -> None:
    # Rewards (1, 0, 0): mean 1/3, sample std 1/sqrt(3) -> A = (2/sqrt3, -1/sqrt3, -1/sqrt3).
    stats = group_advantages([1.0, 0.0, 0.0], eps=0.0)
    r3 = math.sqrt(3)
    assert stats.advantages == pytest.approx([2 / r3, -1 / r3, -1 / r3])
    entropies: list[list[float | None]] = [[0.5, 1.5], [1.0], [0.2, 0.4, 0.4]]
    turns = taura_turns(stats.advantages, entropies)
    # N_G = 6 turns, sum of H = 4.0: the group mean turn entropy is 2/3.
    assert turns.group_entropy == pytest.approx(2 / 3)
    assert turns.weights == [
        pytest.approx([0.75, 2.25]),
        pytest.approx([1.5]),
        pytest.approx([0.3, 0.6, 0.6]),
    ]
    assert turns.advantages == [
        pytest.approx([0.75 * 2 / r3, 2.25 * 2 / r3]),
        pytest.approx([-1.5 / r3]),
        pytest.approx([-0.3 / r3, -0.6 / r3, -0.6 / r3]),
    ]
    # Eq. 4's normalisation: the weights average 1 over the group's turns.
    flat = [w for ws in turns.weights for w in ws]
    assert sum(flat) / len(flat) == pytest.approx(1.0)
    # A wrong trajectory's high-entropy turn gets the larger penalty (Â < A < 0).
    assert turns.advantages[1][0] < stats.advantages[1] < 0


def test_taura_missing_turns_weigh_one_and_zero_entropy_groups_are_uniform() -> None:
    turns = taura_turns([1.0, -1.0], [[2.0, None], [1.0]])
    # Mean over the known turns only: (2 + 1) / 2 = 1.5.
    assert turns.weights == [pytest.approx([2 / 1.5, 1.0]), pytest.approx([1 / 1.5])]
    flat = taura_turns([1.0, -1.0], [[0.0], [0.0, 0.0]])
    assert flat.uniform and flat.weights == [[1.0], [1.0, 1.0]]
    assert flat.advantages == [[1.0], [-1.0, -1.0]]
