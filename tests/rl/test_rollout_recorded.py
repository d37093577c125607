"""What the token-exact path does to cost less must not change what it records: ``rollout``'s
rows, made from the traces its scaffold returned, equal the rows read back from the run folder;
the ledger's conversation keys tell chats apart as the JSON keys did; a trace built from arrays
is the trace built from lists. A small aiohttp server stands in for vLLM's ``/completions``; a
ChatML character tokenizer for the policy's."""

from __future__ import annotations

import asyncio
import importlib
import json
from array import array
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from completions_server import completions_server
from test_token_sequences import ChatML, _text

from omnilab.agents import get_agent
from omnilab.agents.base import Budgets
from omnilab.models import get_model
from omnilab.models.providers.server_tokens import _PromptTexts, exact
from omnilab.models.token_trace import TokenTrace, digest
from omnilab.models.tokens import TokenLedger, _key, _keys
from omnilab.models.types import GenerateConfig
from omnilab.rl import Rollout, rollout, rollouts_of_run
from omnilab.rl.recorded import RecordingAgent
from omnilab.rl.sequences import linked

rollout_module = importlib.import_module("omnilab.rl.rollout")  # the module, not the function
REPLY = "It is <answer>2</answer>.|"


async def _rollouts(data: Path, run: Path, samples: int) -> list[Rollout]:
    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        ids = [ord(c) for c in REPLY]
        lp = [-0.25 - len(body["prompt"]) / 1e4] * len(ids)  # differs with the prompt
        choice = {"text": REPLY, "finish_reason": "stop", "token_ids": ids,
                  "logprobs": {"token_logprobs": lp}}  # fmt: skip
        return web.json_response({"id": "c", "model": "m", "choices": [choice]})

    async with completions_server(completions) as url:
        return await rollout(
            "jsonl", data=data, agent="tir", model=f"vllm:policy@{url}",
            tokenizer=ChatML(), run_dir=run, budgets=Budgets(max_turns=1), tools=[],
            samples=samples,
        )  # fmt: skip


def test_rollout_rows_are_the_rows_read_back_without_reading_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "tasks.jsonl"
    tasks = [{"id": f"t{i}", "question": f"{i}+{i}?", "answer": str(2 * i)} for i in range(3)]
    data.write_text("".join(json.dumps(t) + "\n" for t in tasks))

    def unread(path: Path) -> Any:
        raise AssertionError(f"{path} was read back")

    # The rows come from what the scaffolds returned: no trajectory file is read.
    monkeypatch.setattr(rollout_module, "read_token_calls", unread)
    rows = asyncio.run(_rollouts(data, tmp_path / "run", samples=2))
    monkeypatch.undo()
    read_back = rollouts_of_run(tmp_path / "run")
    assert len(rows) == 6 and {(r.task_id, r.sample) for r in rows} == {
        (f"t{i}", k) for i in range(3) for k in range(2)
    }
    # The same rows, in the same (results file) order, byte for byte.
    assert [r.to_row() for r in rows] == [r.to_row() for r in read_back]
    assert all(r.response_ids == [ord(c) for c in REPLY] for r in rows)
    # Rows are built without validating every id again: they are what validation makes.
    for r in rows:
        checked = Rollout.model_validate(r.model_dump())
        assert checked == r and checked.model_fields_set == r.model_fields_set
        assert {type(v) for v in [*r.prompt_ids, *r.response_mask]} == {int}
        assert {type(v) for v in r.response_logprobs} == {float}


def test_a_trajectory_the_recorder_did_not_see_is_read_from_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = RecordingAgent(get_agent("tir"))
    assert recorder.name == "tir" and recorder.take("nowhere.jsonl") is None
    made = RecordingAgent.__init__

    def elsewhere(self: RecordingAgent, agent: Any) -> None:
        made(self, agent)
        self._pid = -1  # as a copy shipped to another process (a Ray worker) sees itself

    monkeypatch.setattr(RecordingAgent, "__init__", elsewhere)
    read: list[Path] = []
    reader = rollout_module.read_token_calls

    def reading(path: Path) -> Any:
        read.append(path)
        return reader(path)

    monkeypatch.setattr(rollout_module, "read_token_calls", reading)
    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps({"id": "t", "question": "1+1?", "answer": "2"}) + "\n")
    (row,) = asyncio.run(_rollouts(data, tmp_path / "run", samples=1))
    assert read == [tmp_path / "run" / "trajectories" / "t.jsonl"]
    assert row.to_row() == rollouts_of_run(tmp_path / "run")[0].to_row()


def test_conversation_keys_tell_chats_apart() -> None:
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": [{"type": "image", "image": "k"}]},
        {"role": "assistant", "content": "b"},
    ]
    # One running hash gives every prefix's key as hashing that prefix alone would.
    keys = _keys(chat, [3, 5])
    assert keys == {3: _key(chat[:3]), 5: _key(chat)} and keys[3] != keys[5]
    # Pieces are delimited: moving a character between role and content, or a text message
    # against its JSON twin, or an extra field, changes the key.
    assert _key([{"role": "ab", "content": "c"}]) != _key([{"role": "a", "content": "bc"}])
    assert _key([{"role": "a", "content": "1"}]) != _key([{"role": "a", "content": 1}])
    assert _key([{"role": "a", "content": "b"}]) != _key(
        [{"role": "a", "content": "b", "name": "x"}]
    )
    assert _key([{"role": "a", "content": "b"}, {"role": "c", "content": "d"}]) != _key(
        [{"role": "a", "content": "b\x00c"}, {"role": "", "content": "d"}]
    )
    assert _key([dict(m) for m in chat]) == _key(chat)


def test_a_trace_built_from_arrays_is_the_trace_built_from_lists() -> None:
    prompt, ids, logprobs = [5, 6, 7, 2**32 - 1], [9, 2], [-0.1, -0.2]
    listed = TokenTrace.build("t", prompt, ids, logprobs, base_len=3)
    arrays = TokenTrace.build("t", array("I", prompt), array("I", ids), logprobs, base_len=3)
    known = TokenTrace.build("t", prompt, ids, logprobs, base_len=3, base_digest=digest(prompt[:3]))
    assert listed == arrays == known
    assert listed.model_dump_json() == arrays.model_dump_json()
    assert listed.base == digest(prompt[:3]) and listed.sequence == digest([*prompt, *ids])
    assert listed.model_fields_set == TokenTrace(**listed.model_dump()).model_fields_set


def test_the_request_body_is_the_json_of_the_ids_byte_for_byte() -> None:
    adapter = exact(get_model("vllm:policy@http://127.0.0.1:9/v1").adapter, ChatML())
    adapter._prompts = _PromptTexts(keep=2, longest=50)
    placeholder = "\x00omnilab-prompt-ids\x00"
    configs = [
        GenerateConfig(),
        GenerateConfig(temperature=0.7, max_tokens=32, stop=["|"], seed=3),
        GenerateConfig(extra_body={"prompt": [1, 2]}),  # the caller's prompt wins, as before
        GenerateConfig(extra_body={"note": placeholder, "ünï": "cödé"}),
    ]
    prompts = [[1, 2, 3], list(range(40)), [1, 2, 3], list(range(60)), [7], [1, 2, 3]]
    for config in configs:
        for ids in prompts:  # repeated, evicted and too long to keep
            expected = json.dumps(adapter._body(ids, config), ensure_ascii=False).encode()
            assert adapter._encoded(ids, config) == expected
    assert list(adapter._prompts._texts) == [(7,), (1, 2, 3)]


class CountingChatML(ChatML):
    """The ChatML stand-in, counting what it renders."""

    def __init__(self) -> None:
        self.rendered = 0

    async def render(self, chat: list[dict[str, Any]], *, generation: bool) -> tuple[str, bool]:
        self.rendered += 1
        return await super().render(chat, generation=generation)


def test_a_groups_opening_prompt_is_rendered_and_tokenized_once() -> None:
    backend = CountingChatML()
    ledger = TokenLedger(backend)
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "1+1?"}]
    first = asyncio.run(ledger.prompt(chat))
    first.ids.append(0)  # each call gets its own list
    again = asyncio.run(ledger.prompt([dict(m) for m in chat]))
    assert backend.rendered == 1 and again.base_len == 0
    assert again.ids == first.ids[:-1] and _text(again.ids).endswith("<user>1+1?|\n<assistant>")
    other = asyncio.run(ledger.prompt([*chat[:1], {"role": "user", "content": "2+2?"}]))
    assert backend.rendered == 2 and _text(other.ids).endswith("<user>2+2?|\n<assistant>")
    # A long opening (a context rewritten late in a long conversation) is not kept.
    long = [{"role": "user", "content": "x" * 9000}]
    asyncio.run(ledger.prompt(long))
    asyncio.run(ledger.prompt(long))
    assert backend.rendered == 4


def test_a_shared_first_prompt_is_unpacked_once_into_separate_lists() -> None:
    first = TokenTrace.build("t", [1, 2, 3], [4], [-0.4])
    again = TokenTrace.build("t", [1, 2, 3], [5], [-0.5])
    turn = TokenTrace.build("t", [1, 2, 3, 5, 6], [7], [-0.7], base_len=4)
    opened: dict[str, list[int]] = {}
    one = linked([("a", first)], opened)
    two = linked([("b", again), ("c", turn)], opened)
    assert list(opened) == [first.prompt]
    alone = [*linked([("a", first)]), *linked([("b", again), ("c", turn)])]
    assert [vars(s) for s in [*one, *two]] == [vars(s) for s in alone]
    one[0].prompt_ids.append(99)  # each sequence has its own list
    assert two[0].prompt_ids == [1, 2, 3] and opened[first.prompt] == [1, 2, 3]
    assert two[0].response_ids == [5, 6, 7] and two[0].response_mask == [1, 0, 1]
