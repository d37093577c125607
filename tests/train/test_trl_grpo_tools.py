"""TRL's GRPOTrainer on omnilab's MULTI-TURN, tool-using rollouts (its ``rollout_func`` hook):
2 steps, group 2, 4 generated tasks. Each rollout of the ``tir`` agent is two model turns, a
``code_executor`` call run in the sandbox and, after its observation, an answer, sampled through
the token-in/token-out adapter with SmolLM2's real tokenizer (read by transformers from the GGUF,
as the model is) from a local vLLM-style server whose scripted replies come back as that
tokenizer's ids with logprobs. In the batch TRL trains on: the completion ids are exactly the
rollout's response ids, TRL's ``tool_mask`` (what ``env_mask`` becomes) is 1 exactly on the
sampled ids and 0 on the tool observation and template tokens, the sampling logprobs are the
server's, the ids decode to the trajectory's conversation, the parameters change, reward and loss
are logged. Marked ``train`` (``pytest -m train``).

The replies are scripted, not sampled from the weights being trained (this checks the plumbing
of a multi-turn batch, not learning); the second answer to each question is wrong, so each group
has rewards 1 and 0 and a non-zero advantage."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from trainkit import grpo_trainer, smollm2_for_training

from omnilab.models.fake_server import FakeOpenAIServer, FakeReply, RecordedRequest

pytestmark = [pytest.mark.train, pytest.mark.slow]


class ScriptedPolicy(FakeOpenAIServer):
    """vLLM's ``/completions`` for a token-id prompt: a ``code_executor`` call, then (once the
    prompt holds a tool observation) an answer, each closed by ``<|im_end|>`` as a ChatML policy
    samples it; ``token_ids`` and one logprob per id back. Every second answer to a question is
    wrong."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__()
        self.tok = tokenizer
        self.end = int(tokenizer.convert_tokens_to_ids("<|im_end|>"))
        self.answered: dict[str, int] = {}
        self.sampled: list[tuple[list[int], list[int], list[float]]] = []

    def _next(self, request: RecordedRequest) -> FakeReply:
        super()._next(request)
        prompt: list[int] = request.body["prompt"]
        text = self.tok.decode(prompt)
        a, b = map(int, re.findall(r"What is (\d+) plus (\d+)\?", text)[-1])
        if "<|im_start|>tool\n" not in text:
            call = {"name": "code_executor", "arguments": {"code": f"print({a} + {b})"}}
            reply = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
        else:
            with self._lock:
                n = self.answered[f"{a}+{b}"] = self.answered.get(f"{a}+{b}", 0) + 1
            reply = f"The code printed it: <answer>{a + b + (n + 1) % 2}</answer>"
        ids = [*self.tok.encode(reply, add_special_tokens=False), self.end]
        logprobs = [-0.125 * (1 + k % 5) for k in range(len(ids))]
        with self._lock:
            self.sampled.append((prompt, ids, logprobs))
        choice = {"index": 0, "text": reply, "finish_reason": "stop", "token_ids": ids,
                  "logprobs": {"token_logprobs": logprobs}}  # fmt: skip
        return FakeReply(body={"id": "cmpl", "object": "text_completion", "choices": [choice]})


def _runs(mask: list[int]) -> list[tuple[int, int]]:
    """The (start, end) of each run of 1s."""
    runs, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _check_conversation(whole: list[int], mask_from: int, mask: list[int], out: dict[str, Any],
                        j: int, tok: Any, server: ScriptedPolicy) -> None:  # fmt: skip
    from omnilab.models.token_adapter import server_chat
    from omnilab.trajectory import read_trajectory

    runs = _runs(mask)
    assert len(runs) == 2  # two model turns
    for start, end in runs:  # each run is what the server sampled for the sequence before it
        at = mask_from + start
        run = whole[at : mask_from + end]
        got = [lps for p, ids, lps in server.sampled if p == whole[:at] and ids == run]
        assert got and out["logprobs"][j][start:end] == pytest.approx(got[0])
    # Between the turns, mask 0: the template's tool turn holding the observation, then the
    # assistant's header; nothing after the last turn.
    contexts = read_trajectory(Path(out["omnilab_trajectory"][j])).contexts()
    assert len(contexts) == 2
    observation = contexts[-1].messages[-1]
    assert observation.role == "tool" and '"stdout": "' in observation.text
    gap = tok.decode(whole[mask_from + runs[0][1] : mask_from + runs[1][0]])
    assert gap == f"\n<|im_start|>tool\n{observation.text}<|im_end|>\n<|im_start|>assistant\n"
    assert runs[1][1] == len(mask)
    # The ids decode to the conversation the trajectory shows, rendered in the template.
    last = contexts[-1]
    assert last.output is not None
    chat = server_chat([*last.messages, last.output.message], last.tools)
    shown = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=False)
    assert shown == tok.decode(whole) + "\n"
    first = contexts[0]
    opening = server_chat(first.messages, first.tools)
    assert tok.decode(whole[:mask_from]) == tok.apply_chat_template(
        opening, tokenize=False, add_generation_prompt=True
    )


def test_grpo_trains_on_multi_turn_tool_rollouts(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    pytest.importorskip("gguf")
    import torch
    from datasets import Dataset

    from omnilab.rl.trl import trl_rollout_func

    model, tok = smollm2_for_training()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    tasks = [(f"What is {a} plus {a + 1}? Use code_executor.", str(2 * a + 1)) for a in range(4)]
    data = Dataset.from_dict(
        {"prompt": [[{"role": "user", "content": q}] for q, _ in tasks],
         "answer": [a for _, a in tasks]}
    )  # fmt: skip
    batches: list[dict[str, Any]] = []
    with ScriptedPolicy(tok) as server:
        inner = trl_rollout_func(
            agent="tir", model=f"vllm:policy@{server.base_url}", tokenizer=tok, max_turns=3,
            run_root=tmp_path / "runs", tools=["code_executor"], scorer="answer_set",
        )  # fmt: skip

        trainer, seen = grpo_trainer(model, tok, data, inner, tmp_path / "out")
        batch_of = trainer._generate_and_score_completions

        def capture(inputs: Any) -> dict[str, Any]:
            batch: dict[str, Any] = batch_of(inputs)
            batches.append(batch)
            return batch

        trainer._generate_and_score_completions = capture  # type: ignore[method-assign]
        result = trainer.train()

    assert result.global_step == 2 and len(seen) == len(batches) == 2
    logged = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logged) == 2 and all("reward" in h for h in logged)
    assert all(math.isfinite(float(h["loss"])) for h in logged)
    assert sorted(r for out in seen for r in out["omnilab_reward"]) == [0.0] * 4 + [1.0] * 4
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed
    questions = {q for out in seen for p in out["prompt_ids"] for q in [tok.decode(p)]}
    assert all(any(q in text for text in questions) for q, _ in tasks)  # 4 generated tasks
    for out, batch in zip(seen, batches, strict=True):
        assert "tool_mask" in batch and bool((batch["advantages"] != 0).any())
        for j, ids in enumerate(out["completion_ids"]):
            n = int(batch["completion_mask"][j].sum())
            p = int(batch["prompt_mask"][j].sum())
            width = batch["prompt_ids"].shape[1]
            # What TRL trains on is the rollout's sequence, id for id (prompt left-padded,
            # completion right-padded).
            assert batch["completion_ids"][j, :n].tolist() == ids
            assert batch["prompt_ids"][j, width - p :].tolist() == out["prompt_ids"][j]
            mask = batch["tool_mask"][j, :n].tolist()
            assert mask == out["env_mask"][j] and set(mask) == {0, 1}
            logps = batch["sampling_per_token_logps"][j, :n].tolist()
            assert logps == pytest.approx(out["logprobs"][j])
            assert all(v == 0.0 for v, m in zip(out["logprobs"][j], mask, strict=True) if not m)
            whole = [*out["prompt_ids"][j], *ids]
            _check_conversation(whole, len(out["prompt_ids"][j]), mask, out, j, tok, server)
