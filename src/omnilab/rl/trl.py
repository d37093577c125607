"""omnilab's rollouts inside TRL's ``GRPOTrainer`` (its ``rollout_func`` hook).

``GRPOTrainer(..., rollout_func=trl_rollout_func(agent="tir", model="local:smollm2"),
reward_funcs=[rollout_reward])``: TRL hands the function its batch of prompts (each repeated
``num_generations`` times), omnilab runs every entry as a task through the agent in the sandbox
(:func:`~omnilab.rl.rollout.rollout`, token-exact) and returns, per entry, the prompt ids, the
response ids (TRL's "completion": every turn, tool observations included), the sampling logprobs
and ``env_mask`` (1 on the ids the policy sampled: TRL trains on those only; TRL 1.16 turns it
into the batch's ``tool_mask``, so every turn of a multi-turn, tool-using rollout is one
completion whose tool observations and template tokens carry no loss). The task's reward travels
in ``omnilab_reward`` to :func:`rollout_reward`. The policy may be the embedded model or a
vLLM-style server with the trainer's tokenizer (``tokenizer=``).

Each dataset row is a task: ``prompt`` (a string or chat messages; the last user message is the
question) and ``answer`` (a string or a list of acceptable answers), optionally ``id``. A rollout
whose context was rewritten has several sequences; TRL gets the first. Nothing here imports torch
or TRL.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omnilab.agents.base import Budgets
from omnilab.rl.rollout import Rollout, rollout

__all__ = ["rollout_reward", "task_rows", "trl_rollout_func"]


def _question(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    users = [m for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
    if not users:
        raise ValueError("a prompt without a user message has no question")
    content: Any = users[-1].get("content") or ""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def task_rows(prompts: Sequence[Any], answers: Sequence[Any]) -> list[dict[str, Any]]:
    """Generic ``jsonl`` tasks (``p0``, ``p1``, ... in batch order) for TRL prompts and their
    answers."""
    rows = []
    for i, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
        accepted = answer if isinstance(answer, list) else [answer]
        rows.append({"id": f"p{i}", "question": _question(prompt), "answers": accepted})
    return rows


def _pick(found: list[Rollout], count: int) -> list[Rollout]:
    first: dict[str, Rollout] = {}
    for r in found:
        if r.segment == 0:
            first.setdefault(r.task_id, r)
    missing = [f"p{i}" for i in range(count) if f"p{i}" not in first]
    if missing:
        raise RuntimeError(f"no token-exact rollout for {', '.join(missing)} (did the model fail?)")
    return [first[f"p{i}"] for i in range(count)]


def trl_rollout_func(
    *,
    agent: str,
    model: str,
    answer_column: str = "answer",
    max_turns: int | None = None,
    agent_options: Mapping[str, Any] | None = None,
    tools: Sequence[str] | None = None,
    scorer: str = "answer_set",
    run_root: str | Path | None = None,
    tokenizer: Any = None,
) -> Callable[[list[Any], Any], dict[str, Any]]:
    """A ``rollout_func`` for TRL's ``GRPOTrainer`` running scaffold ``agent`` with the
    token-exact policy ``model``; the answers come from the trainer's dataset column
    ``answer_column`` (looked up by prompt). Each call's run folder goes under ``run_root``
    (a temporary folder when unset). ``tokenizer`` is the policy's for a ``vllm:``,
    ``sglang:`` or ``llamacpp-server:`` model (see :func:`~omnilab.models.tokens.token_exact`;
    usually the trainer's ``processing_class``).

    Do not give the trainer ``tools`` as well: TRL then runs its own tool loop and ignores
    ``env_mask``."""
    root = Path(run_root) if run_root is not None else Path(tempfile.mkdtemp(prefix="trl-"))
    calls = 0

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        column = trainer.train_dataset
        by_prompt = {
            json.dumps(p, sort_keys=True): a
            for p, a in zip(column["prompt"], column[answer_column], strict=True)
        }
        answers = [by_prompt[json.dumps(p, sort_keys=True)] for p in prompts]
        folder = root / f"step-{calls:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / "tasks.jsonl"
        data.write_text(
            "".join(json.dumps(r) + "\n" for r in task_rows(prompts, answers)), encoding="utf-8"
        )
        found = asyncio.run(
            rollout(
                "jsonl",
                data=data,
                agent=agent,
                model=model,
                run_dir=folder / "run",
                agent_options=agent_options,
                tools=tools,
                scorer=scorer,
                budgets=Budgets(max_turns=max_turns) if max_turns is not None else None,
                seed=calls,
                tokenizer=tokenizer,
            )
        )
        picked = _pick(found, len(prompts))
        return {
            "prompt_ids": [r.prompt_ids for r in picked],
            "completion_ids": [r.response_ids for r in picked],
            "logprobs": [r.response_logprobs for r in picked],
            "env_mask": [r.response_mask for r in picked],
            "omnilab_reward": [r.reward for r in picked],
            "omnilab_trajectory": [r.trajectory for r in picked],
        }

    return rollout_func


def rollout_reward(
    prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
) -> list[float]:
    """TRL's ``reward_funcs`` signature: the reward omnilab scored each rollout with (passed on
    by :func:`trl_rollout_func` as ``omnilab_reward``)."""
    rewards = kwargs.get("omnilab_reward")
    if rewards is None:
        raise ValueError("no omnilab_reward: use rollout_reward with trl_rollout_func")
    return [float(r) for r in rewards]
