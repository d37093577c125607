"""A Hugging Face tokenizer as the token-exact adapter's backend: the end of an assistant turn is
the special token the chat template closes turns with, not the tokenizer's ``eos_token`` (which
transformers reads as ``<|im_start|>`` from SmolLM2's GGUF), so a sampled ``<|im_end|>`` closes
the turn once: it is not left in the reply's text nor written a second time by the template."""

from __future__ import annotations

import asyncio
from typing import Any

from hf_standin import ChatMLTokenizer

from omnilab.models.model import Model
from omnilab.models.token_adapter import CallbackTokenAdapter, HFTokenizer
from omnilab.models.token_trace import digest
from omnilab.models.tokens import Sampled
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec

ADD = ToolSpec(
    name="add",
    description="Add.",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
)
CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>'


def test_the_end_of_turn_is_the_templates_closing_special_token() -> None:
    assert asyncio.run(HFTokenizer(ChatMLTokenizer()).end_of_turn()) == (2, "<|im_end|>")
    # A template that closes turns with plain text: the tokenizer's EOS.
    plain = HFTokenizer(ChatMLTokenizer(close="\n\n"))
    assert asyncio.run(plain.end_of_turn()) == (1, "<|im_start|>")


def test_a_sampled_end_of_turn_closes_the_turn_once() -> None:
    tok = ChatMLTokenizer()
    prompts: list[list[int]] = []
    replies = [[*tok.encode(CALL, add_special_tokens=False), 2],
               [*tok.encode("It is 2.", add_special_tokens=False), 2]]  # fmt: skip

    async def sample(ids: list[int], config: GenerateConfig, images: list[Any]) -> Sampled:
        prompts.append(ids)
        out = replies[len(prompts) - 1]
        return Sampled(out, [-0.5] * len(out), "stop")

    async def run() -> list[ModelOutput]:
        model = Model(CallbackTokenAdapter(HFTokenizer(tok), sample), name="verl:policy")
        msgs = [Message.user("1+1?")]
        first = await model.generate(msgs, tools=[ADD])
        msgs += [first.message, Message.tool(first.tool_calls[0].id, "2")]
        return [first, await model.generate(msgs, tools=[ADD])]

    first, second = asyncio.run(run())
    assert (first.text, second.text, first.tool_calls[0].name) == ("", "It is 2.", "add")
    # The second trace names the first call's whole sequence as its base (the digest the
    # ledger kept, equal to the digest of the base's ids).
    assert first.tokens is not None and second.tokens is not None
    assert second.tokens.base == first.tokens.sequence == digest(prompts[0] + replies[0])
    rest = prompts[1][len(prompts[0]) + len(replies[0]) :]
    assert tok.decode(rest) == "\n<|im_start|>tool\n2<|im_end|>\n<|im_start|>assistant\n"
    assert prompts[1][: len(prompts[0]) + len(replies[0])] == prompts[0] + replies[0]
