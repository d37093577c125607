"""Token-in/token-out calls to a vLLM-style server: the chat template is applied on the client
side, the prompt goes to ``/completions`` as token ids, the sampled ids come back (vLLM's
``token_ids`` field or ``token_id:N`` logprob tokens) and a tool-using conversation is one
growing sequence. A small aiohttp server stands in for vLLM; a ChatML character tokenizer for
the policy's."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from completions_server import completions_server
from test_token_sequences import ChatML

from omnilab.agents.base import Budgets
from omnilab.models import ModelConfigError, ModelOutput, get_model
from omnilab.models.events import ModelCallEvent
from omnilab.models.tokens import token_exact
from omnilab.models.types import Message, ToolSpec
from omnilab.rl import Rollout, rollout, sequences

ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
)
CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>|'
REPLIES = [CALL, "It is 2.|"]


def _ids(text: str) -> list[int]:
    return [ord(c) for c in text]


def _completions(
    seen: list[dict[str, Any]],
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The fake server's answers: the tool call (ids as ``token_ids``), then the reply (ids as
    ``token_id:N`` strings in ``logprobs.tokens``)."""

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        text = REPLIES[len(seen) - 1]
        ids = _ids(text)
        logprobs: dict[str, Any] = {"token_logprobs": [-0.5] * len(ids)}
        choice: dict[str, Any] = {"text": text, "finish_reason": "stop", "logprobs": logprobs}
        if len(seen) == 1:
            choice["token_ids"] = ids
        else:
            logprobs["tokens"] = [f"token_id:{t}" for t in ids]
        return web.json_response({"id": "c", "model": "m", "choices": [choice]})

    return completions


def test_a_tool_conversation_is_one_sequence_of_token_ids() -> None:
    seen: list[dict[str, Any]] = []
    events: list[ModelCallEvent] = []

    async def run() -> list[ModelOutput]:
        async with completions_server(_completions(seen)) as url:
            model = token_exact(
                get_model(f"vllm:policy@{url}", cache=False, sink=events.append),
                tokenizer=ChatML(),
            )
            msgs = [Message.user("1+1?")]
            first = await model.generate(msgs, tools=[ADD])
            msgs += [first.message, Message.tool(first.tool_calls[0].id, "2")]
            second = await model.generate(msgs, tools=[ADD])
            return [first, second]

    first, second = asyncio.run(run())
    assert [c.name for c in first.tool_calls] == ["add"] and first.tool_calls[0].arguments == {
        "a": 1
    }
    assert second.text == "It is 2."
    # The server got ids, asked for the sampled ids back; the second prompt extends the first
    # prompt and the sampled ids exactly.
    assert all(b["return_token_ids"] and isinstance(b["prompt"], list) for b in seen)
    assert not any("n_probs" in b for b in seen)  # llama.cpp's parameter, for llamacpp-server only
    opening = "".join(chr(t) for t in seen[0]["prompt"])
    assert opening.startswith("<system>") and opening.endswith("<user>1+1?|\n<assistant>")
    assert seen[1]["prompt"][: len(seen[0]["prompt"]) + len(CALL)] == seen[0]["prompt"] + _ids(CALL)
    rest = "".join(chr(t) for t in seen[1]["prompt"][len(seen[0]["prompt"]) + len(CALL) :])
    assert rest == "\n<tool>2|\n<assistant>"
    (seq,) = sequences(events)
    assert seq.calls == 2 and seq.tokenizer == "chars"
    assert [t for t, m in zip(seq.response_ids, seq.response_mask, strict=True) if m] == _ids(
        CALL + REPLIES[1]
    )
    assert seq.ids == seen[1]["prompt"] + _ids(REPLIES[1])
    assert json.loads(json.dumps(second.model_dump(mode="json")))["tokens"]["base"] is not None


@pytest.mark.skipif(
    importlib.util.find_spec("transformers") is not None, reason="transformers is installed"
)
def test_a_server_policy_without_its_tokenizer_is_one_line() -> None:
    with pytest.raises(ModelConfigError, match="needs the policy's tokenizer"):
        token_exact(get_model("vllm:policy@http://127.0.0.1:9/v1"))


def test_rollout_takes_the_server_policys_tokenizer(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    async def completions(request: web.Request) -> web.Response:
        seen.append(await request.json())
        ids = _ids(REPLIES[1])
        choice = {"text": REPLIES[1], "finish_reason": "stop", "token_ids": ids,
                  "logprobs": {"token_logprobs": [-0.5] * len(ids)}}  # fmt: skip
        return web.json_response({"id": "c", "model": "m", "choices": [choice]})

    async def run() -> list[Rollout]:
        async with completions_server(completions) as url:
            return await rollout(
                "jsonl", data=data, agent="tir", model=f"vllm:policy@{url}",
                tokenizer=ChatML(), run_dir=tmp_path / "run", budgets=Budgets(max_turns=1),
                tools=[],
            )  # fmt: skip

    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps({"id": "t", "question": "1+1?", "answer": "2"}) + "\n")
    (row,) = asyncio.run(run())
    assert len(seen) == 1 and isinstance(seen[0]["prompt"], list)
    assert row.prompt_ids == seen[0]["prompt"] and row.response_ids == _ids(REPLIES[1])
    assert row.response_mask == [1] * len(REPLIES[1])


def test_llama_cpp_servers_ids_come_from_logprobs_content() -> None:
    seen: list[dict[str, Any]] = []
    events: list[ModelCallEvent] = []

    async def completions(request: web.Request) -> web.Response:
        seen.append(await request.json())
        # llama.cpp's server: no token_ids; each sampled token's id and logprob in
        # logprobs.content (tools/server: probs_vector_to_json), once n_probs > 0.
        content = [
            {"id": t, "token": chr(t), "bytes": [t], "logprob": -0.1 * k, "top_logprobs": []}
            for k, t in enumerate(_ids(REPLIES[1]))
        ]
        choice = {"text": REPLIES[1], "index": 0, "finish_reason": "stop",
                  "logprobs": {"content": content}}  # fmt: skip
        return web.json_response({"id": "c", "model": "m", "choices": [choice]})

    async def run() -> ModelOutput:
        async with completions_server(completions) as url:
            model = token_exact(
                get_model(f"llamacpp-server:policy@{url}", cache=False, sink=events.append),
                tokenizer=ChatML(),
            )
            return await model.generate([Message.user("1+1?")])

    out = asyncio.run(run())
    assert out.text == "It is 2."
    assert seen[0]["n_probs"] == 1 and isinstance(seen[0]["prompt"], list)
    (seq,) = sequences(events)
    sampled = _ids(REPLIES[1])
    assert [t for t, m in zip(seq.response_ids, seq.response_mask, strict=True) if m] == sampled
    assert seq.response_logprobs == pytest.approx([-0.1 * k for k in range(len(sampled))])
