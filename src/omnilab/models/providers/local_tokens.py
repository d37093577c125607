"""The token-exact twin of the embedded ``local`` model.

The GGUF's own chat template is applied in the worker process (llama.cpp's Jinja formatter, the
same one its chat completions use), the conversation is kept as one growing sequence by a
:class:`~omnilab.models.tokens.TokenLedger`, and the worker samples from those ids, replying
with the sampled ids and their logprobs (the model's own distribution, before a tool grammar
masks it). Tool calls and response formats are constrained by the same grammar as the plain
adapter's; ``GenerateConfig.stop`` strings are not applied on this path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.providers.local import LocalAdapter, _chat, _output, output_schema
from omnilab.models.providers.local_runtime import RuntimeCrashError, worker_for
from omnilab.models.token_trace import TokenTrace
from omnilab.models.tokens import Chat, TokenLedger
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec

__all__ = ["LocalTokenAdapter", "exact"]


class LocalTokenAdapter(LocalAdapter):
    """:class:`LocalAdapter` sending token ids and recording the ones it sampled."""

    def __init__(self, plain: LocalAdapter) -> None:
        self.__dict__.update(plain.__dict__)
        self.tokenizer = f"gguf:{self.path.name}"
        self.ledger = TokenLedger(self)
        self._eot: tuple[int, str] | None = None

    def _load(self) -> dict[str, Any]:
        # The plain path's model serves rendering, tokenizing and sampling: the worker reads the
        # sampled ids' logprobs from the last position's logits, so no logits are kept for every
        # position (``logits_all`` doubled the CPU per generated token).
        return {"path": str(self.path), "n_ctx": self._n_ctx, "threads": self._threads,
                "logits_all": False}  # fmt: skip

    async def _ask(self, op: str, **fields: Any) -> dict[str, Any]:
        worker = worker_for(self.path, self._n_ctx, self._threads)
        request = {"op": op, "load": self._load(), **fields}
        try:
            reply = await asyncio.to_thread(worker.call, request)
        except RuntimeCrashError as crash:
            raise ProviderError(ErrorKind.CRASH, crash.detail, advice=crash.advice) from None
        if reply.get("error") == "grammar":
            raise ProviderError(
                ErrorKind.BAD_REQUEST,
                f"a schema cannot be compiled to a grammar ({reply.get('message')})",
            )
        if "error" in reply:
            raise self._overflow(str(reply.get("message")))
        result: dict[str, Any] = reply["result"]
        return result

    async def render(self, chat: Chat, *, generation: bool) -> tuple[str, bool]:
        """The GGUF's chat template applied to ``chat``."""
        out = await self._ask("render", chat=chat, generation=generation)
        return str(out["text"]), bool(out["special"])

    async def encode(self, text: str, *, first: bool) -> list[int]:
        """Ids of ``text`` by the model's own tokenizer (special tokens parsed)."""
        out = await self._ask("encode", text=text, first=first)
        return [int(t) for t in out["ids"]]

    async def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (special tokens written out)."""
        out = await self._ask("decode", ids=list(ids))
        return str(out["text"])

    async def end_of_turn(self) -> tuple[int, str]:
        """The end-of-generation id and its text."""
        if self._eot is None:
            out = await self._ask("eot")
            self._eot = (int(out["id"]), str(out["text"]))
        return self._eot

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """One call from token ids: the prompt continues the conversation's sequence."""
        choice = config.tool_choice
        offered = list(tools) if choice != "none" else []
        fmt = config.response_format
        chat: Chat = list(_chat(messages, offered, choice, fmt))
        schema = output_schema(offered, choice, fmt)
        prompt = await self.ledger.prompt(chat)
        params = self._request(chat, schema, config)["params"]
        out = await self._ask(
            "sample",
            prompt_ids=prompt.ids,
            schema=json.dumps(schema) if schema is not None else None,
            params=params,
        )
        ids = [int(t) for t in out["ids"]]
        eot, _ = await self.end_of_turn()
        closed = bool(ids) and ids[-1] == eot
        text = await self.decode(ids[:-1] if closed else ids)
        result = {
            "id": None,
            "choices": [{"message": {"content": text}, "finish_reason": out["finish_reason"]}],
            "usage": {"prompt_tokens": len(prompt.ids), "completion_tokens": len(ids)},
        }
        output = _output(result, bool(offered), structured=fmt is not None)
        trace = TokenTrace.build(
            self.tokenizer,
            prompt.ids,
            ids,
            out["logprobs"],
            base_len=prompt.base_len,
            base_digest=prompt.base_digest,
        )
        answered = list(_chat([*messages, output.message], offered, choice, fmt))
        self.ledger.remember(answered, [*prompt.ids, *ids], closed=closed, digest=trace.sequence)
        return output.model_copy(update={"tokens": trace})


def exact(plain: Any) -> LocalTokenAdapter:
    """The token-exact twin of a ``local`` adapter."""
    if not isinstance(plain, LocalAdapter):
        raise TypeError(f"not a local adapter: {type(plain).__name__}")
    return LocalTokenAdapter(plain)
