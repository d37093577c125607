"""Token-exact calls: a multi-turn conversation kept as one growing token sequence.

A trainer must learn from the ids the policy sampled, not from a chat re-rendered and
re-tokenized afterwards (templates re-render tool calls, whitespace and thinking differently).
A token-exact adapter renders the policy's chat template on the client side, tokenizes only what
is new since its last call on that conversation (template tokens and tool observations), appends
it to the previous prompt and the ids the model actually sampled, and sends ids to the runtime.
Each output then carries a :class:`~omnilab.models.token_trace.TokenTrace`.

:class:`TokenLedger` does the bookkeeping for any backend. It keeps no per-conversation state:
an entry is keyed by the chat (as the adapter renders it) that a call's answer completes, so
concurrent rollouts, repeated samples and branches each find their own sequence. When no earlier
call's chat is a prefix of a new one (a context was purged or rewritten), the prompt is tokenized
whole and the trace names no base: the conversation starts a new sequence there, visibly. A
new conversation's prompt is kept by its chat for a while (the samples of one task open with the
same chat): a backend's template must render a chat the same way each time (one that writes
today's date keeps the date it wrote first, as the ledger keeps every earlier turn's ids).

:func:`token_exact` turns a :class:`~omnilab.models.Model` into its token-exact twin for the
providers that have one (``local``).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
from array import array
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from omnilab.models.errors import ErrorKind, ModelConfigError, ProviderError
from omnilab.models.model import Model
from omnilab.models.token_media import chat_images
from omnilab.models.token_trace import id_array

__all__ = [
    "MediaTokenBackend",
    "Sampled",
    "TokenBackend",
    "TokenLedger",
    "TokenPrompt",
    "token_exact",
]

Chat = list[dict[str, Any]]

# Providers with a token-exact adapter: "module:function" taking the plain adapter (and, for
# servers, the tokenizer).
_SERVER = "omnilab.models.providers.server_tokens:exact"
_EXACT = {
    "local": "omnilab.models.providers.local_tokens:exact",
    "vllm": _SERVER,
    "sglang": _SERVER,
    "llamacpp-server": _SERVER,
}

_SENTINEL = "\x00omnilab-turn\x00"
_OPENED = 64
"""New conversations' prompts kept (tasks in flight at once, each opening a group's samples)."""
_OPENED_LONGEST = 8192
"""Longer prompts (a context rewritten late in a long conversation) are not kept."""


class TokenBackend(Protocol):
    """What a token-exact adapter needs from the policy's runtime and tokenizer."""

    tokenizer: str
    """What the ids belong to (stored in every trace)."""

    async def render(self, chat: Chat, *, generation: bool) -> tuple[str, bool]:
        """The chat template applied to ``chat`` (with the assistant's generation prompt when
        ``generation``), and whether the text already holds the special tokens (BOS) a fresh
        tokenization would otherwise add."""
        ...

    async def encode(self, text: str, *, first: bool) -> list[int]:
        """Token ids of ``text`` (special tokens parsed; BOS added when ``first``)."""
        ...

    async def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (special tokens written out)."""
        ...

    async def end_of_turn(self) -> tuple[int, str]:
        """The end-of-generation id and its text."""
        ...


@dataclass(frozen=True)
class Sampled:
    """What the runtime sampled for one prompt of ids."""

    ids: list[int]
    logprobs: list[float]
    finish_reason: str


@runtime_checkable
class MediaTokenBackend(TokenBackend, Protocol):
    """A backend that also takes pictures (a vision-language processor): the chat's image
    blocks (see :mod:`omnilab.models.token_media`) render as placeholders, which
    :meth:`encode_media` expands given the pictures."""

    async def encode_media(self, text: str, images: Sequence[Any], *, first: bool) -> list[int]:
        """Token ids of ``text`` whose placeholders stand for ``images`` (in order)."""
        ...


@dataclass(frozen=True)
class TokenPrompt:
    """The ids to send for one call: ``ids`` whole, of which the first ``base_len`` are an
    earlier call's sequence; ``images``: the pictures the ids' placeholders stand for."""

    ids: list[int]
    base_len: int
    images: list[Any] = field(default_factory=list)
    base_digest: str | None = None
    """The :func:`~omnilab.models.token_trace.digest` of the base, when the ledger knows it."""


def _message_text(message: dict[str, Any]) -> str:
    # A text message (the usual case) as its two strings, anything else as sorted JSON; each
    # tagged, and every string led by its length, so no two different chats hash alike.
    role, content = message.get("role"), message.get("content")
    if len(message) == 2 and type(role) is str and type(content) is str:
        return f"t{len(role)}:{role}{len(content)}:{content}"
    dumped = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
    return f"j{len(dumped)}:{dumped}"


def _keys(chat: Chat, cuts: Sequence[int]) -> dict[int, str]:
    """The key of ``chat[:cut]`` for each cut: one running hash over the messages, read at
    each cut (a long conversation is hashed once per call, not once per earlier answer)."""
    wanted = set(cuts)
    running = hashlib.sha256()
    found: dict[int, str] = {}
    for at in range(max(wanted, default=0)):
        running.update(_message_text(chat[at]).encode())
        if at + 1 in wanted:
            found[at + 1] = running.copy().hexdigest()
    return found


def _key(chat: Chat) -> str:
    return _keys(chat, [len(chat)])[len(chat)]


class TokenLedger:
    """The sequences of recent calls, keyed by the chat their answers complete (bounded)."""

    def __init__(self, backend: TokenBackend, *, limit: int = 2048) -> None:
        self.backend = backend
        self._limit = limit
        self._seen: OrderedDict[str, tuple[array[int], bool, str | None]] = OrderedDict()
        self._opened: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        """The ids of recent new conversations' prompts, by the chat's key."""

    async def prompt(self, chat: Chat, pictures: Mapping[str, Any] | None = None) -> TokenPrompt:
        """The prompt ids of ``chat``: the longest earlier conversation it continues, then the
        new messages' template text tokenized; else the whole chat tokenized. ``pictures``:
        what the chat's image blocks name (needs a :class:`MediaTokenBackend`)."""
        images = [(pictures or {})[k] for k in chat_images(chat)]
        # Only chats an answer ends are remembered: those are the keys to look up.
        cuts = [c for c in range(len(chat) - 1, 0, -1) if chat[c - 1].get("role") == "assistant"]
        keys = _keys(chat, cuts) if cuts else {}
        for cut in cuts:
            key = keys[cut]
            found = self._seen.get(key)
            if found is None:
                continue
            self._seen.move_to_end(key)
            tail = await self._continuation(chat, cut, found[1])
            if tail is not None:
                base = found[0].tolist()
                new = images[len(images) - len(chat_images(chat[cut:])) :]
                ids = await self._encode(tail, new, first=False)
                return TokenPrompt([*base, *ids], len(base), images, found[2])
            break
        # A new conversation: the samples of one task (an RL group) open with the same chat,
        # rendered and tokenized once (text only: pictures are not kept here).
        opening = _key(chat) if not images else ""
        opened = self._opened.get(opening) if opening else None
        if opened is not None:
            self._opened.move_to_end(opening)
            return TokenPrompt(list(opened), 0, images)
        text, special = await self.backend.render(chat, generation=True)
        ids = await self._encode(text, images, first=not special)
        if opening and len(ids) <= _OPENED_LONGEST:
            self._opened[opening] = tuple(ids)
            while len(self._opened) > _OPENED:
                self._opened.popitem(last=False)
        return TokenPrompt(ids, 0, images)

    async def _encode(self, text: str, images: list[Any], *, first: bool) -> list[int]:
        if not images:
            return await self.backend.encode(text, first=first)
        if not isinstance(self.backend, MediaTokenBackend):
            raise ProviderError(
                ErrorKind.UNSUPPORTED_MEDIA,
                f"the tokenizer {self.backend.tokenizer} takes text only (pictures need a "
                "multi-modal processor)",
            )
        return await self.backend.encode_media(text, images, first=first)

    async def _continuation(self, chat: Chat, cut: int, closed: bool) -> str | None:
        # The text after the sampled answer: the template's end of that turn (less the
        # end-of-turn token when the model sampled it), then the new messages and the next
        # generation prompt. None when the template does not render the old turns unchanged.
        before, _ = await self.backend.render(chat[:cut], generation=False)
        after, _ = await self.backend.render(chat, generation=True)
        if not after.startswith(before):
            return None
        marked = copy.deepcopy(chat[:cut])
        marked[-1]["content"] = _SENTINEL
        shown, _ = await self.backend.render(marked, generation=False)
        if shown.count(_SENTINEL) != 1:
            return None
        close = shown.split(_SENTINEL, 1)[1]
        _, eot_text = await self.backend.end_of_turn()
        if closed and close.startswith(eot_text):
            close = close[len(eot_text) :]
        return close + after[len(before) :]

    def remember(
        self, chat: Chat, sequence: Sequence[int], *, closed: bool, digest: str | None = None
    ) -> None:
        """Record that the answer ending ``chat`` (its last message) completes ``sequence``
        (whose :func:`~omnilab.models.token_trace.digest` is ``digest``, when known; a
        ``uint32`` array is kept as it is, not copied: the caller must not change it);
        ``closed``: the model sampled the end-of-turn token itself (else the template's end of
        the turn is template tokens)."""
        if not chat or chat[-1].get("role") != "assistant":
            return
        key = _key(chat)
        self._seen[key] = (id_array(sequence), closed, digest)
        self._seen.move_to_end(key)
        while len(self._seen) > self._limit:
            self._seen.popitem(last=False)


def token_exact(model: Model, *, tokenizer: Any = None) -> Model:
    """A view of ``model`` whose calls are token-exact (each output carries ``tokens``); the
    response cache is off for it (a cached answer has no sequence to continue).

    ``local:`` models use the GGUF's own tokenizer and template. ``vllm:``, ``sglang:`` and
    ``llamacpp-server:`` servers take ``tokenizer``: a :class:`TokenBackend`, a Hugging Face
    tokenizer, or its name or folder (default: the served model's id, loaded with
    ``transformers``).

    Raises :class:`~omnilab.models.errors.ModelConfigError` for a provider without a
    token-exact adapter.
    """
    provider = model.name.partition(":")[0]
    target = _EXACT.get(provider)
    if target is None:
        raise ModelConfigError(
            model.name,
            f"provider {provider!r} has no token-exact adapter",
            advice=f"use one of: {', '.join(f'{p}:...' for p in sorted(_EXACT))}",
        )
    module, _, function = target.partition(":")
    make = getattr(importlib.import_module(module), function)
    view = model.bound(cache=False)
    view.adapter = make(model.adapter) if target != _SERVER else make(model.adapter, tokenizer)
    return view
