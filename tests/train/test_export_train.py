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
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.add_special_tokens(SPECIALS)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<|pad|>", unk_token="<|unk|>", eos_token="<|end|>"
    )
    fast.chat_template = TEMPLATE
    return fast


def reply_text(message: dict[str, Any]) -> str:
    """An assistant message as TEMPLATE renders it inside {% generation %}."""
    calls = "".join(f"[call {c['function']['name']}]" for c in message.get("tool_calls") or [])
    return (message["content"] or "") + calls + "<|end|>"


def train_two_steps(out: Path, tmp_path: Path) -> list[str]:
    """Two SFTTrainer steps on the file ``out``; the text the loss covers, per row."""
    datasets = pytest.importorskip("datasets")
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import SFTConfig, SFTTrainer

    # a text-only tiny model: the image paths stay in the file, the image column is not used
    data = datasets.load_dataset("json", data_files=str(out), split="train")
    data = data.remove_columns([c for c in ("images", "tools") if c in data.column_names])
    tokenizer = char_tokenizer(out.read_text(encoding="utf-8"))
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    args = SFTConfig(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=1,
        assistant_only_loss=True, max_length=8192, report_to=[], save_strategy="no",
        use_cpu=True, logging_steps=1,
    )  # fmt: skip
    trainer = SFTTrainer(
        model=LlamaForCausalLM(config), args=args, train_dataset=data, processing_class=tokenizer
    )
    covered = []
    for row in trainer.train_dataset:
        # TRL folds its masks into labels: -100 wherever the loss does not reach
        ids = [t for t, lab in zip(row["input_ids"], row["labels"], strict=True) if lab != -100]
        covered.append("".join(tokenizer.convert_ids_to_tokens(ids)))
    assert trainer.train().global_step == 2
    return covered


@pytest.fixture()
def trainer_stack() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("trl")


@pytest.mark.usefixtures("trainer_stack")
def test_whole_contexts_train_on_every_reply_and_nothing_else(
    tir_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "trl.jsonl"
    cli("export", "sft", tir_run, "--format", "trl", "--out", out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    expected = [
        "".join(reply_text(m) for m in row["messages"] if m["role"] == "assistant") for row in rows
    ]
    assert train_two_steps(out, tmp_path) == expected


@pytest.mark.usefixtures("trainer_stack")
def test_per_call_rows_train_on_their_completion_only(ota_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "trl.jsonl"
    cli("export", "sft", ota_run, "--format", "trl", "--out", out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(any(m["role"] == "assistant" for m in r["prompt"]) for r in rows[1:3])
    assert train_two_steps(out, tmp_path) == [reply_text(r["completion"][0]) for r in rows]
