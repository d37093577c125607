"""``omnilab rollout`` with the embedded ``local:smollm2``: each row's ids decode, with the model's
own tokenizer and chat template, to exactly the conversation its trajectory shows; the mask is 1
exactly on the ids the model sampled and the logprobs are there and only there."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.models import get_model
from omnilab.models.providers.local import _chat
from omnilab.models.providers.local_files import smollm2_path
from omnilab.models.providers.local_tokens import LocalTokenAdapter
from omnilab.models.tokens import token_exact
from omnilab.rl import Rollout
from omnilab.trajectory import read_trajectory
from omnilab.trajectory.contexts import CallContext

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(smollm2_path() is None, reason="the [local] extra is not installed"),
]


def _rollouts(tmp_path: Path) -> list[Rollout]:
    from omnilab.cli.main import app

    data = tmp_path / "tasks.jsonl"
    item = {"id": "mul", "question": "Use code_executor to compute 17*23.", "answer": "391"}
    data.write_text(json.dumps(item) + "\n", encoding="utf-8")
    out = tmp_path / "rollouts.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "rollout",
            "jsonl",
            "--data",
            str(data),
            "--agent",
            "tir",
            "--model",
            "local:smollm2",
            "--samples",
            "2",
            "--max-turns",
            "2",
            "--tools",
            "code_executor",
            "--out",
            str(out),
            "-O",
            'generate={"max_tokens": 40, "temperature": 0.9}',
        ],
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert "wrote " in result.output and " rollouts (" in result.output
    return [Rollout.from_row(json.loads(line)) for line in out.read_text().splitlines()]


def _choice(context: CallContext) -> str | None:
    sent = context.call.sent
    return sent.config.tool_choice if sent is not None and sent.config is not None else None


def test_rollout_rows_are_the_trajectory_conversation_token_for_token(tmp_path: Path) -> None:
    rows = _rollouts(tmp_path)
    # One sequence per sample, or more where the forced-final call (tools withdrawn: another
    # system prompt in the local model's format) starts a sequence of its own.
    assert {r.sample for r in rows} == {0, 1}
    adapter = token_exact(get_model("local:smollm2")).adapter
    assert isinstance(adapter, LocalTokenAdapter)
    eot, eot_text = asyncio.run(adapter.end_of_turn())
    for row in rows:
        contexts = read_trajectory(Path(row.trajectory)).contexts()
        traced = [c for c in contexts if c.call.id in row.calls]
        assert [c.call.id for c in traced] == row.calls and len(traced) == row.num_turns >= 1
        # Mask 1 exactly on the sampled ids, with their logprobs; 0 and no logprob elsewhere.
        sampled = [t for c in traced for t in c.output.tokens.sampled()]  # type: ignore[union-attr]
        logprobs = [p for c in traced for p in c.output.tokens.sampled_logprobs()]  # type: ignore[union-attr]
        pairs = list(zip(row.response_ids, row.response_mask, row.response_logprobs, strict=True))
        assert [t for t, m, _ in pairs if m == 1] == sampled
        assert [p for _, m, p in pairs if m == 1] == pytest.approx(logprobs)
        assert all(p < 0 or p == pytest.approx(0, abs=1e-6) for p in logprobs)
        assert all(p == 0.0 for _, m, p in pairs if m == 0)
        assert set(row.response_mask) <= {0, 1} and row.reward in (0.0, 1.0)
        # The prompt is the first call's conversation in the GGUF's template.
        first = traced[0]
        opening = _chat(first.messages, first.tools, _choice(first))
        text, _ = asyncio.run(adapter.render(opening, generation=True))
        assert asyncio.run(adapter.decode(row.prompt_ids)) == text
        # The whole sequence is the last call's conversation plus its answer, each assistant turn
        # as the model sampled it, in the template: nothing re-rendered, nothing lost.
        last = traced[-1]
        assert last.output is not None
        chat = _chat([*last.messages, last.output.message], last.tools, _choice(last))
        samples = [c.output.tokens.sampled() for c in traced]  # type: ignore[union-attr]
        # The sequence's own turns are the last ones (a sequence started by a rewritten context
        # holds the earlier turns in its prompt, rendered as the template renders them).
        turns = [i for i, m in enumerate(chat) if m["role"] == "assistant"][-len(samples) :]
        assert len(turns) == len(samples)
        for at, ids in zip(turns, samples, strict=True):
            body = ids[:-1] if ids and ids[-1] == eot else ids
            chat[at]["content"] = asyncio.run(adapter.decode(body))
        shown, _ = asyncio.run(adapter.render(chat, generation=False))
        decoded = asyncio.run(adapter.decode([*row.prompt_ids, *row.response_ids]))
        closed = samples[-1][-1] == eot
        rest = shown[len(decoded) :]
        assert shown.startswith(decoded), (shown, decoded)
        assert rest == ("\n" if closed else f"{eot_text}\n")
