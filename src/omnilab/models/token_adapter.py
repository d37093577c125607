"""Token-exact calls whose sampling is a function of token ids: the shared loop of the server
adapter (:mod:`~omnilab.models.providers.server_tokens`) and of trainers' own inference servers
(verl's server manager, :mod:`omnilab.rl.verl`).

:class:`TokenAdapter` renders the conversation with a :class:`~omnilab.models.tokens.TokenBackend`
(tools described in the system prompt, calls written and read back as Hermes ``<tool_call>``
blocks), keeps it one growing sequence with a :class:`~omnilab.models.tokens.TokenLedger`, and
asks :meth:`TokenAdapter.sample` for the ids; :class:`HFTokenizer` is a Hugging Face tokenizer as a
backend. Text only: media parts are refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from omnilab.content import Text
from omnilab.models.capabilities import Capabilities
from omnilab.models.parsing import postprocess
from omnilab.models.token_media import media_chat
from omnilab.models.token_trace import TokenTrace
from omnilab.models.tokens import Chat, Sampled, TokenBackend, TokenLedger
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage

__all__ = ["CallbackTokenAdapter", "HFTokenizer", "Sampler", "TokenAdapter", "server_chat"]

Sampler = Callable[[list[int], GenerateConfig], Awaitable[Sampled]]
"""Samples a continuation of prompt ids under a call's settings."""


_MARK = "\x00omnilab-end-of-turn\x00"


def _special_ids(tokenizer: Any) -> set[int]:
    ids = {int(i) for i in getattr(tokenizer, "all_special_ids", None) or []}
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return ids | {int(i) for i, token in added.items() if getattr(token, "special", False)}


class HFTokenizer:
    """A Hugging Face tokenizer (anything with ``apply_chat_template``, ``encode`` and
    ``eos_token``) as a :class:`~omnilab.models.tokens.TokenBackend`.

    The end of an assistant turn is the special token the chat template closes that turn with
    (``<|im_end|>`` in ChatML, ``<|eot_id|>`` in Llama 3), which a chat policy samples to stop;
    the tokenizer's ``eos_token`` only when the template closes the turn with no special token
    (tokenizers read from a GGUF by transformers may name ``<|im_start|>`` as their EOS)."""

    def __init__(self, tokenizer: Any, name: str | None = None) -> None:
        self.hf = tokenizer
        self.tokenizer = f"hf:{name or getattr(tokenizer, 'name_or_path', '') or 'tokenizer'}"
        self._end: tuple[int, str] | None = None

    async def render(self, chat: Chat, *, generation: bool) -> tuple[str, bool]:
        """The tokenizer's chat template applied to ``chat`` (it writes its own BOS)."""
        text = self.hf.apply_chat_template(chat, tokenize=False, add_generation_prompt=generation)
        return str(text), True

    async def encode(self, text: str, *, first: bool) -> list[int]:
        """Ids of ``text`` (special tokens in the text parsed as such)."""
        return [int(t) for t in self.hf.encode(text, add_special_tokens=first)]

    async def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (special tokens written out)."""
        return str(self.hf.decode(list(ids), skip_special_tokens=False))

    async def end_of_turn(self) -> tuple[int, str]:
        """The id and text of the token that closes an assistant turn (see the class)."""
        if self._end is None:
            self._end = self._find_end()
        return self._end

    def _find_end(self) -> tuple[int, str]:
        chat = [{"role": "user", "content": "?"}, {"role": "assistant", "content": _MARK}]
        text = str(self.hf.apply_chat_template(chat, tokenize=False, add_generation_prompt=False))
        after = text.split(_MARK, 1)[1] if _MARK in text else ""
        ids = [int(t) for t in self.hf.encode(after, add_special_tokens=False)] if after else []
        if ids and ids[0] in _special_ids(self.hf):
            return ids[0], str(self.hf.decode(ids[:1], skip_special_tokens=False))
        return int(self.hf.eos_token_id), str(self.hf.eos_token)


def server_chat(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Chat:
    """The messages as plain chat dicts for a chat template: tool calls written as Hermes
    ``<tool_call>`` blocks in the assistant's text, tools described in the system prompt; media
    refused (see :func:`~omnilab.models.token_media.media_chat` for a processor's pictures)."""
    return media_chat(messages, tools).chat


class TokenAdapter:
    """The token-exact loop over any sampler: subclasses implement :meth:`sample`."""

    capabilities: Capabilities
    endpoint: str
    secrets: tuple[str, ...] = ()

    def __init__(self, backend: TokenBackend) -> None:
        self.backend = backend
        self.ledger = TokenLedger(backend)

    async def sample(self, ids: list[int], config: GenerateConfig) -> Sampled:
        """The ids sampled after ``ids`` with their logprobs."""
        raise NotImplementedError

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """One token-in/token-out call continuing the conversation's sequence."""
        offered = list(tools) if config.tool_choice != "none" else []
        chat = server_chat(messages, offered)
        prompt = await self.ledger.prompt(chat)
        done = await self.sample(prompt.ids, config)
        ids = done.ids
        eot, _ = await self.backend.end_of_turn()
        closed = bool(ids) and ids[-1] == eot
        text = await self.backend.decode(ids[:-1] if closed else ids)
        raw = ModelOutput(
            message=Message(role="assistant", content=[Text(text=text)] if text else []),
            usage=Usage(prompt_tokens=len(prompt.ids), completion_tokens=len(ids)),
            finish_reason=done.finish_reason,
        )
        # Calls are read from the text now, so the conversation the agent continues is the one
        # remembered here (the Model's own pass finds nothing more to do).
        output = postprocess(raw, offered, keep_think=config.keep_think)
        trace = TokenTrace.build(
            self.backend.tokenizer, prompt.ids, ids, done.logprobs, base_len=prompt.base_len
        )
        answered = server_chat([*messages, output.message], offered)
        self.ledger.remember(answered, [*prompt.ids, *ids], closed=closed)
        return output.model_copy(update={"tokens": trace})


class CallbackTokenAdapter(TokenAdapter):
    """A token-exact adapter whose sampling is ``sampler`` (a trainer's inference server)."""

    def __init__(self, backend: TokenBackend, sampler: Sampler, *, endpoint: str = "callback"):
        super().__init__(backend)
        self._sampler = sampler
        self.capabilities = Capabilities()
        self.endpoint = endpoint

    async def sample(self, ids: list[int], config: GenerateConfig) -> Sampled:
        """What ``sampler`` returns."""
        return await self._sampler(ids, config)
