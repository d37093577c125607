"""The papers' rewards in verl's ``compute_score`` and TRL's ``reward_funcs`` signatures, and the
advantage functions (GRPO, Code-X group shaping, TAURA)."""

from __future__ import annotations

import pytest

from omnilab.rl.rewards import (
    code_x_advantages,
    compute_score,
    group_advantages,
    reward_func,
    taura_advantages,
)


def test_compute_score_uses_the_datasets_scorer_or_the_named_one() -> None:
    right = compute_score("jsonl", "<answer>Paris</answer>", ["Paris", "paris, france"])
    wrong = compute_score("jsonl", "<answer>Lyon</answer>", "Paris")
    assert right["score"] == 1.0 and right["acc"] is True and right["scorer"] == "answer_set"
    assert wrong["score"] == 0.0 and wrong["acc"] is False
    # OmniAgent's MCQ reward (eq. 2), by the dataset's scorer with the task's options.
    info = {"task_type": "MCQ", "options": {"A": "a cat", "B": "a counter"}, "question": "?"}
    mcq = compute_score("omniagent", "<answer>B</answer>", "B", info)
    assert mcq["score"] == 1.0 and mcq["acc"] is True
    assert compute_score("omniagent", "<answer>A</answer>", "B", info)["score"] == 0.0


def test_a_scorer_that_needs_the_run_says_so() -> None:
    with pytest.raises(ValueError, match="needs extra_info\\['trajectory'\\]"):
        compute_score("code-x", "done", "x", {"scorer": "code-x-reward"})


def test_trl_reward_func_scores_each_completion_against_its_answer() -> None:
    reward = reward_func("answer_set")
    completions = [[{"role": "assistant", "content": "<answer>4</answer>"}], "<answer>5</answer>"]
    assert reward(["q", "q"], completions, answer=["4", "4"]) == [1.0, 0.0]
    assert reward.__name__ == "omnilab_answer_set"


def test_advantages() -> None:
    grpo = group_advantages([1.0, 0.0])
    assert grpo.advantages[0] > 0 > grpo.advantages[1]
    shaped = code_x_advantages([1.0, 0.0, 1.0], [False, False, True])
    assert shaped.active == 2 and shaped.advantages[2] == 0.0
    assert code_x_advantages([1.0, 1.0]).dropped == "zero-variance"
    taura = taura_advantages([1.0, 0.0], [[2.0, 0.0], [1.0]])
    assert taura.weights == [[2.0, 0.0], [1.0]]
    assert taura.advantages[0] == pytest.approx([2 * grpo.advantages[0], 0.0])
