"""Token traces pack compactly and link into one growing sequence per conversation; the ledger
continues a conversation with only the new template text tokenized; rollout rows round-trip.
No model here: a ChatML renderer and a character tokenizer stand in for the runtime."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from omnilab.models import ModelConfigError, get_model
from omnilab.models.events import ModelCallEvent, summarize_input
from omnilab.models.token_trace import (
    TokenTrace,
    digest,
    pack_floats,
    pack_ids,
    unpack_floats,
    unpack_ids,
)
from omnilab.models.tokens import TokenLedger, token_exact
from omnilab.models.types import ModelOutput
from omnilab.rl import Rollout, TrajectoryTokenError, sequences


def test_ids_and_logprobs_pack_as_base64_arrays() -> None:
    ids = [0, 1, 49151, 2**32 - 1]
    assert unpack_ids(pack_ids(ids)) == ids
    assert unpack_floats(pack_floats([-0.5, 0.0, -3.25])) == [-0.5, 0.0, -3.25]
    # 4 bytes a token: a 100k-token rollout is ~533 kB of text, not one JSON number each.
    assert len(pack_ids(list(range(3000)))) == 16000
    assert digest([1, 2]) != digest([2, 1]) and len(digest([1])) == 32


def test_trace_stores_the_prompt_after_its_base() -> None:
    trace = TokenTrace.build("t", [5, 6, 7, 8], [9, 2], [-0.1, -0.2], base_len=3)
    assert trace.base == digest([5, 6, 7]) and trace.prompt_tail() == [8]
    assert trace.sampled() == [9, 2] and trace.sequence == digest([5, 6, 7, 8, 9, 2])
    with pytest.raises(ValueError, match="2 sampled ids but 1 logprobs"):
        TokenTrace.build("t", [1], [2, 3], [-0.1])


def _call(trace: TokenTrace | None) -> ModelCallEvent:
    return ModelCallEvent(
        model="local:x",
        input=summarize_input([], []),
        output=ModelOutput(tokens=trace),
        latency_s=0.0,
        attempts=1,
    )


def test_sequences_link_calls_mask_samples_and_branch() -> None:
    first = TokenTrace.build("t", [1, 2], [3, 4], [-0.3, -0.4])
    second = TokenTrace.build("t", [1, 2, 3, 4, 10, 11], [5], [-0.5], base_len=4)
    branch = TokenTrace.build("t", [1, 2, 3, 4, 12], [6, 7], [-0.6, -0.7], base_len=4)
    fresh = TokenTrace.build("t", [20], [21], [-0.9])
    plain = _call(None)
    found = sequences([_call(first), plain, _call(second), _call(branch), _call(fresh)])
    assert len(found) == 3
    main, side, other = found
    assert main.prompt_ids == [1, 2] and main.response_ids == [3, 4, 10, 11, 5]
    assert main.response_mask == [1, 1, 0, 0, 1] and main.calls == 2
    assert main.response_logprobs == pytest.approx([-0.3, -0.4, 0.0, 0.0, -0.5])
    assert side.response_ids == [3, 4, 12, 6, 7] and side.response_mask == [1, 1, 0, 1, 1]
    assert side.calls == 2
    assert other.prompt_ids == [20] and other.response_mask == [1]
    orphan = TokenTrace.build("t", [9, 9, 9], [1], [-1.0], base_len=2)
    with pytest.raises(TrajectoryTokenError, match="no earlier call made"):
        sequences([_call(orphan)])


def test_rollout_rows_pack_and_round_trip() -> None:
    r = Rollout(
        task_id="a", tokenizer="t", prompt_ids=[1], response_ids=[2, 3],
        response_mask=[1, 0], response_logprobs=[-0.25, 0.0], reward=1.0,
    )  # fmt: skip
    row = json.loads(json.dumps(r.to_row()))
    assert isinstance(row["response_ids"], str) and Rollout.from_row(row) == r
    with pytest.raises(ValueError, match="differ in length"):
        Rollout(task_id="a", tokenizer="t", prompt_ids=[], response_ids=[1],
                response_mask=[], response_logprobs=[])  # fmt: skip


class ChatML:
    """A ChatML template over a one-id-per-character tokenizer; ``|`` is the end of turn."""

    tokenizer = "chars"

    async def render(self, chat: list[dict[str, Any]], *, generation: bool) -> tuple[str, bool]:
        text = "".join(f"<{m['role']}>{m['content']}|\n" for m in chat)
        return text + ("<assistant>" if generation else ""), False

    async def encode(self, text: str, *, first: bool) -> list[int]:
        return [ord(c) for c in text]

    async def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)

    async def end_of_turn(self) -> tuple[int, str]:
        return ord("|"), "|"


def _text(ids: list[int]) -> str:
    return "".join(chr(i) for i in ids)


def test_ledger_continues_a_conversation_from_the_sampled_ids() -> None:
    ledger = TokenLedger(ChatML())
    chat = [{"role": "user", "content": "hi"}]
    first = asyncio.run(ledger.prompt(chat))
    assert first.base_len == 0 and _text(first.ids) == "<user>hi|\n<assistant>"
    # The model sampled "  yo|" (odd spacing the chat shows as "yo"): the ids are kept as sampled.
    sampled = [ord(c) for c in "  yo|"]
    answered = [*chat, {"role": "assistant", "content": "yo"}]
    ledger.remember(answered, [*first.ids, *sampled], closed=True)
    nxt = asyncio.run(ledger.prompt([*answered, {"role": "user", "content": "ok"}]))
    assert nxt.base_len == len(first.ids) + len(sampled)
    assert _text(nxt.ids) == "<user>hi|\n<assistant>  yo|\n<user>ok|\n<assistant>"
    # Cut by max_tokens (no end of turn sampled): the template closes the turn.
    ledger.remember(answered, [*first.ids, *sampled[:-1]], closed=False)
    cut = asyncio.run(ledger.prompt([*answered, {"role": "user", "content": "ok"}]))
    assert _text(cut.ids) == "<user>hi|\n<assistant>  yo|\n<user>ok|\n<assistant>"
    assert cut.base_len == len(first.ids) + len(sampled) - 1
    # A rewritten history is tokenized whole, with no base.
    other = asyncio.run(ledger.prompt([{"role": "user", "content": "new"}, *answered[1:]]))
    assert other.base_len == 0


def test_token_exact_needs_a_provider_that_has_one(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('["hi"]', encoding="utf-8")
    with pytest.raises(ModelConfigError, match="no token-exact adapter"):
        token_exact(get_model(f"scripted:{script}"))
