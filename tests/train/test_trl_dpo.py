"""``omnilab export dpo`` trains: TRL's DPOTrainer runs two steps on an OmniDPO pair (a scripted
failure, judge and fix) with a tiny randomly initialised model on the CPU; the loss is finite and
the collated batch's completion mask covers exactly the chosen and rejected assistant turns.
Marked ``train`` (``pytest -m train``); nothing is downloaded (a character tokenizer)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from explore_kit import register
from test_dpo import _failed_run, _judgment
from test_export_train import char_tokenizer, reply_text
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.tools.base import Tool

pytestmark = pytest.mark.train


@pytest.fixture()
def test_tool() -> Iterator[Tool]:
    yield from register()


def _export(tmp_path: Path) -> Path:
    run = _failed_run(tmp_path)
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps([_judgment(1).output.text]))
    fixer = tmp_path / "fix.json"
    fix_call = {"tool_call": {"name": "explore_lookup", "arguments": {"key": "a"}}}
    fixer.write_text(json.dumps([fix_call, "So it is <answer>42</answer>"]))
    out = tmp_path / "pairs.jsonl"
    args = ["export", "dpo", run, "--judge", f"scripted:{judge}", "--model", f"scripted:{fixer}"]
    result = CliRunner().invoke(app, [str(a) for a in [*args, "--out", out]])
    assert result.exit_code == 0, result.output
    return out


def test_dpo_trains_on_the_pairs_completions_only(tmp_path: Path, test_tool: Tool) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    import torch
    from datasets import load_dataset
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import DPOConfig, DPOTrainer

    out = _export(tmp_path)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    data = load_dataset("json", data_files=str(out), split="train").remove_columns(["tools"])
    tokenizer = char_tokenizer(out.read_text(encoding="utf-8"))
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    args = DPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=1,
        report_to=[], save_strategy="no", use_cpu=True, logging_steps=1, max_length=8192,
    )  # fmt: skip
    torch.manual_seed(0)
    policy = LlamaForCausalLM(config)
    reference = LlamaForCausalLM(config)
    reference.load_state_dict(policy.state_dict())
    trainer = DPOTrainer(
        model=policy, ref_model=reference, args=args, train_dataset=data,
        processing_class=tokenizer,
    )  # fmt: skip
    batch = trainer.data_collator([trainer.train_dataset[0]])
    ids, mask = batch["input_ids"], batch["completion_mask"]
    covered = [
        "".join(
            tokenizer.convert_ids_to_tokens([int(t) for t, m in zip(row, keep, strict=True) if m])
        )
        for row, keep in zip(ids.tolist(), mask.tolist(), strict=True)
    ]
    # The chosen half, then the rejected half: each exactly its assistant turn as rendered (with
    # the role marker: this template has no generation prompt to leave it in the prompt).
    turn = "<|assistant|>{}".format
    assert covered == [turn(reply_text(rows[0][k][0])) for k in ("chosen", "rejected")]
    assert covered[0] != covered[1]
    result = trainer.train()
    assert result.global_step == 2
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert losses and all(torch.isfinite(torch.tensor(v)) for v in losses)
