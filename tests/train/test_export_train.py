"""The ``trl`` export trains: TRL's SFTTrainer runs two steps on it with a tiny randomly
initialised model on the CPU, and the assistant-only mask it builds covers exactly the agent's
replies. Marked ``train`` (``pytest -m train``); skipped without torch and trl, which are not
omnilab dependencies. Nothing is downloaded: the tokenizer is character-level, built here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from trainkit import cli

pytestmark = pytest.mark.train

# Each assistant turn sits inside {% generation %}, so TRL's assistant_only_loss can mask the rest.
TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'assistant' -%}"
    "<|assistant|>{% generation %}"
    "{%- if m['content'] is string -%}{{ m['content'] }}{%- endif -%}"
    "{%- for c in (m['tool_calls'] or []) -%}[call {{ c['function']['name'] }}]{%- endfor -%}"
    "<|end|>{% endgeneration %}"
    "{%- else -%}"
    "<|{{ m['role'] }}|>"
    "{%- if m['content'] is string -%}{{ m['content'] }}"
    "{%- else -%}{%- for p in m['content'] -%}"
    "{%- if p['type'] == 'text' -%}{{ p['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}<|end|>"
    "{%- endif -%}"
    "{%- endfor -%}"
)
SPECIALS = ["<|pad|>", "<|unk|>", "<|end|>", "<|assistant|>", "<|system|>", "<|user|>", "<|tool|>"]


def char_tokenizer(text: str) -> Any:
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(set(text) | {chr(c) for c in range(32, 127)} | {"\n"})
    vocab = {tok: i for i, tok in enumerate([*SPECIALS, *chars])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|unk|>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("(?s)."), behavior="isolated")
    tok.add_special_tokens(SPECIALS)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<|pad|>", unk_token="<|unk|>", eos_token="<|end|>"
    )
    fast.chat_template = TEMPLATE
    return fast


def test_sft_trainer_runs_two_steps_and_masks_exactly_the_replies(
    tir_run: Path, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import SFTConfig, SFTTrainer

    out = tmp_path / "trl.jsonl"
    cli("export", "sft", tir_run, "--format", "trl", "--out", out)
    text = out.read_text(encoding="utf-8")
    replies = [
        [m for m in json.loads(line)["messages"] if m["role"] == "assistant"]
        for line in text.splitlines()
    ]
    # a text-only tiny model: the image paths stay in the file, the image column is not used
    data = datasets.load_dataset("json", data_files=str(out), split="train")
    data = data.remove_columns([c for c in ("images", "tools") if c in data.column_names])
    tokenizer = char_tokenizer(text)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    args = SFTConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=1,
        assistant_only_loss=True, max_length=4096, report_to=[], save_strategy="no",
        use_cpu=True, logging_steps=1, dataset_num_proc=None,
    )  # fmt: skip
    trainer = SFTTrainer(
        model=LlamaForCausalLM(config), args=args, train_dataset=data, processing_class=tokenizer
    )
    for row, theirs in zip(trainer.train_dataset, replies, strict=True):
        trained = [t for t, m in zip(row["input_ids"], row["assistant_masks"], strict=True) if m]
        expected = "".join(
            (r["content"] or "")
            + "".join(f"[call {c['function']['name']}]" for c in r.get("tool_calls") or [])
            + "<|end|>"
            for r in theirs
        )
        assert tokenizer.decode(trained) == expected
    result = trainer.train()
    assert result.global_step == 2
