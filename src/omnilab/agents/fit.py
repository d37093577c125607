"""Fitting a conversation to a model's context window before each call.

A model that declares its window (``Capabilities.context_tokens``: the embedded model's
``models.local_n_ctx``, or a ``context_tokens`` flag in ``models.capabilities``) gets a prompt
that fits it: the longest texts (a transcript, a page of search results, an evidence digest) are
cut head-and-tail, longest first, until the estimate fits with room for the reply. The cut
messages replace the originals in the conversation (the session records each as a
``ContextEdit``). When even every message cut to its floor does not fit (a system prompt and
tool list longer than the window), the call is not made: :class:`ContextTooSmallError` says in
one line that this agent needs a bigger context.

The estimate is characters over :data:`CHARS_PER_TOKEN`, deliberately pessimistic: no
tokenizer is at hand for a remote model, and a prompt cut a little more than needed works where
one cut too little fails.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from omnilab.content import Text
from omnilab.models.errors import ErrorKind, ModelError
from omnilab.models.types import Message, ToolSpec
from omnilab.textcut import cut_text

__all__ = ["CHARS_PER_TOKEN", "ContextTooSmallError", "fit_messages", "prompt_tokens"]

CHARS_PER_TOKEN = 3.0
"""Characters per token of the estimate (English prose runs near 4 under small vocabularies;
JSON, numbers and time stamps nearer 2.5)."""
_FLOOR = 300
"""A message is never cut below this many characters: the start of a result still says what
it is."""
_PER_MESSAGE = 8
"""Tokens of chat-template framing per message (role markers, separators)."""
_DEFAULT_REPLY = 512
"""Reply tokens reserved when the call does not say (the embedded model's default)."""


class ContextTooSmallError(ModelError):
    """The conversation cannot be cut to fit the model's context window."""


def _chars(message: Message) -> int:
    calls = sum(len(c.name) + len(json.dumps(c.arguments)) for c in message.tool_calls)
    return sum(len(p.text) for p in message.content if isinstance(p, Text)) + calls


def prompt_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """The estimated prompt tokens of ``messages`` with ``tools`` described in the prompt."""
    tool_chars = sum(
        len(t.name) + len(t.description) + len(json.dumps(t.parameters)) + 40 for t in tools
    )
    chars = sum(_chars(m) for m in messages) + tool_chars
    return int(chars / CHARS_PER_TOKEN) + _PER_MESSAGE * (len(messages) + 1)


def _cut_part(message: Message, part: int, limit: int) -> Message:
    """``message`` with its ``part``-th content part (a text) cut to ``limit`` characters."""
    parts = list(message.content)
    piece = parts[part]
    assert isinstance(piece, Text)
    parts[part] = Text(text=cut_text(piece.text, limit))
    return message.model_copy(update={"content": parts})


def fit_messages(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    window: int,
    reply_tokens: int | None,
    model: str,
) -> dict[int, Message]:
    """The messages to replace (by index) so that ``messages`` fit ``window`` tokens with
    ``reply_tokens`` (default 512) left for the reply; empty when they fit already.

    The longest text is cut first, to what the estimate needs or to its floor, then the next
    longest; the texts of the last message (the newest observation, or the question with its evidence) only
    when cutting the others is not enough, the system prompt after it. Raises :class:`ContextTooSmallError` when nothing more can be cut.
    """
    reply = reply_tokens or _DEFAULT_REPLY
    budget = window - reply
    over = prompt_tokens(messages, tools) - budget
    if over <= 0:
        return {}
    current = list(messages)
    edits: dict[int, Message] = {}
    last = len(current) - 1

    def rank(unit: tuple[int, int]) -> tuple[int, int]:
        # Older results first, then the newest message (what the model must act on now), the
        # system prompt (the instructions and answer format) only when nothing else is left;
        # within a tier the longest text first (a transcript, a digest, a page of results).
        i, j = unit
        tier = 2 if current[i].role == "system" else 1 if i == last else 0
        return tier, -len(current[i].content[j].text)  # type: ignore[union-attr]

    units = [
        (i, j)
        for i, m in enumerate(current)
        for j, p in enumerate(m.content)
        if isinstance(p, Text) and len(p.text) > _FLOOR
    ]
    for i, j in sorted(units, key=rank):
        size = len(current[i].content[j].text)  # type: ignore[union-attr]
        keep = max(_FLOOR, size - int((over + 16) * CHARS_PER_TOKEN))
        current[i] = edits[i] = _cut_part(current[i], j, keep)
        over = prompt_tokens(current, tools) - budget
        if over <= 0:
            return edits
    raise ContextTooSmallError(
        model,
        f"this agent's prompt needs about {budget + over} tokens even with every message cut "
        f"short, and the model's context holds {window} ({reply} of them kept for the reply)",
        kind=ErrorKind.CONTEXT_LENGTH,
        advice="use a model with a bigger context (or raise models.local_n_ctx for the "
        "embedded model), fewer tools, or a smaller max_tokens",
    )
