"""Token-exact calls whose sampling is a function of token ids: the shared loop of the server
adapter (:mod:`~omnilab.models.providers.server_tokens`) and of trainers' own inference servers
(verl's server manager, :mod:`omnilab.rl.verl`).

:class:`TokenAdapter` renders the conversation with a :class:`~omnilab.models.tokens.TokenBackend`
(tools described in the system prompt, calls written and read back as Hermes ``<tool_call>``
blocks), keeps it one growing sequence with a :class:`~omnilab.models.tokens.TokenLedger`, and
asks :meth:`TokenAdapter.sample` for the ids; :class:`HFTokenizer` is a Hugging Face tokenizer as a
backend (text only: media parts are refused), :class:`HFProcessor` a multi-modal processor (pictures
and video frames, see :mod:`~omnilab.models.token_media`), whose pictures the sampler gets beside
the ids.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from omnilab.content import Text
from omnilab.models.capabilities import Capabilities
from omnilab.models.parsing import postprocess
from omnilab.models.token_media import media_chat
from omnilab.models.token_trace import TokenTrace, id_array
from omnilab.models.tokens import Chat, MediaTokenBackend, Sampled, TokenBackend, TokenLedger
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage

__all__ = [
    "CallbackTokenAdapter",
    "HFProcessor",
    "HFTokenizer",
    "Sampler",
    "TokenAdapter",
    "server_chat",
]

Sampler = Callable[[list[int], GenerateConfig, list[Any]], Awaitable[Sampled]]
"""Samples a continuation of prompt ids under a call's settings, given the pictures the ids'
placeholders stand for (empty for text)."""


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
        self._template: Any = tokenizer
        """What applies the chat template (a processor's may differ from its tokenizer's)."""

    def _render(self, chat: Chat, generation: bool) -> str:
        return str(
            self._template.apply_chat_template(
                chat, tokenize=False, add_generation_prompt=generation
            )
        )

    async def render(self, chat: Chat, *, generation: bool) -> tuple[str, bool]:
        """The chat template applied to ``chat`` (it writes its own BOS)."""
        return self._render(chat, generation), True

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
        text = self._render(chat, False)
        after = text.split(_MARK, 1)[1] if _MARK in text else ""
        ids = [int(t) for t in self.hf.encode(after, add_special_tokens=False)] if after else []
        if ids and ids[0] in _special_ids(self.hf):
            return ids[0], str(self.hf.decode(ids[:1], skip_special_tokens=False))
        return int(self.hf.eos_token_id), str(self.hf.eos_token)


class HFProcessor(HFTokenizer):
    """A Hugging Face multi-modal processor (an ``AutoProcessor``: chat template, tokenizer and
    image processor, as verl's agent loops use it) as a
    :class:`~omnilab.models.tokens.MediaTokenBackend`: its chat template writes a placeholder
    for each image block and the processor expands it into the picture's ids, with
    ``processor_kwargs`` (verl's ``data.mm_processor_kwargs``: ``max_pixels``, ...)."""

    def __init__(
        self,
        processor: Any,
        tokenizer: Any = None,
        name: str | None = None,
        processor_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(tokenizer if tokenizer is not None else processor.tokenizer, name)
        self.processor = processor
        self._template = processor
        self.processor_kwargs = dict(processor_kwargs or {})

    async def encode_media(self, text: str, images: Sequence[Any], *, first: bool) -> list[int]:
        """Ids of ``text`` with each placeholder expanded for its picture by the processor."""
        out = self.processor(
            text=[text], images=list(images), add_special_tokens=first, **self.processor_kwargs
        )
        ids = out["input_ids"][0]
        return [int(t) for t in (ids.tolist() if hasattr(ids, "tolist") else ids)]


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
        self._media = isinstance(backend, MediaTokenBackend)  # a protocol check: costly, once

    async def sample(
        self, ids: list[int], config: GenerateConfig, images: Sequence[Any] = ()
    ) -> Sampled:
        """The ids sampled after ``ids`` (whose placeholders stand for ``images``) with their
        logprobs."""
        raise NotImplementedError

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """One token-in/token-out call continuing the conversation's sequence."""
        offered = list(tools) if config.tool_choice != "none" else []
        # Pictures only where the backend is a processor that takes them (else refused).
        caps = self.capabilities if self._media else None
        asked = media_chat(messages, offered, caps)
        prompt = await self.ledger.prompt(asked.chat, asked.pictures)
        done = await self.sample(prompt.ids, config, prompt.images)
        ids = done.ids
        eot, _ = await self.backend.end_of_turn()
        closed = bool(ids) and ids[-1] == eot
        text = await self.backend.decode(ids[:-1] if closed else ids)
        # The ids as arrays once: the trace packs and hashes them, the ledger keeps them.
        asked_ids, sampled_ids = id_array(prompt.ids), id_array(ids)
        trace = TokenTrace.build(
            self.backend.tokenizer,
            asked_ids,
            sampled_ids,
            done.logprobs,
            base_len=prompt.base_len,
            base_digest=prompt.base_digest,
        )
        raw = ModelOutput(
            message=Message(role="assistant", content=[Text(text=text)] if text else []),
            usage=Usage(prompt_tokens=len(prompt.ids), completion_tokens=len(ids)),
            finish_reason=done.finish_reason,
            tokens=trace,
        )
        # Calls are read from the text now, so the conversation the agent continues is the one
        # remembered here (the Model's own pass finds nothing more to do); the trace stays.
        output = postprocess(raw, offered, keep_think=config.keep_think)
        answered = [*asked.chat, *media_chat([output.message], []).chat]
        sequence = asked_ids + sampled_ids
        self.ledger.remember(answered, sequence, closed=closed, digest=trace.sequence)
        return output


class CallbackTokenAdapter(TokenAdapter):
    """A token-exact adapter whose sampling is ``sampler`` (a trainer's inference server)."""

    def __init__(
        self,
        backend: TokenBackend,
        sampler: Sampler,
        *,
        endpoint: str = "callback",
        capabilities: Capabilities | None = None,
    ) -> None:
        super().__init__(backend)
        self._sampler = sampler
        # A processor's policy takes pictures (video as frames); a tokenizer's, text.
        media = isinstance(backend, MediaTokenBackend)
        self.capabilities = capabilities or Capabilities(image=media)
        self.endpoint = endpoint

    async def sample(
        self, ids: list[int], config: GenerateConfig, images: Sequence[Any] = ()
    ) -> Sampled:
        """What ``sampler`` returns."""
        return await self._sampler(ids, config, list(images))
