"""Final answers: ``<answer>...</answer>`` extraction, with the fallbacks the agents use.

OmniGAIA (Appendix A.2) takes the span of the *last* ``<answer>...</answer>`` pair. When a model
ends without one, the agents take its whole final message instead (:func:`final_answer` says
which it did), so a model that answers plainly still has an answer on record.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["AnswerSource", "extract_answer", "final_answer", "looks_like_tool_call"]

AnswerSource = Literal["tag", "unclosed_tag", "whole_text"]
"""Where an answer came from: a closed tag, a tag cut off at the end, or the whole message."""

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_EXACT = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
"""OmniGAIA's released code matches the tag as written (``eval_results.py``)."""
_OPEN = re.compile(r"<answer>", re.IGNORECASE)
# A call a model wrote as text that the parser could not recover: a tag, or a JSON object with
# an "arguments" key (how every text tool-call convention spells it).
_CALL_TEXT = re.compile(r"<tool_call>|<function[=>]|\"arguments\"\s*:", re.IGNORECASE)


def extract_answer(text: str, *, case_sensitive: bool = False) -> str | None:
    """The content of the last ``<answer>...</answer>``, stripped; ``None`` when there is none.
    ``case_sensitive``: only the lower-case tag counts (``<ANSWER>`` is no tag), as OmniGAIA's
    released code reads it; by default any case counts."""
    spans = (_ANSWER_EXACT if case_sensitive else _ANSWER).findall(text)
    return spans[-1].strip() if spans else None


def final_answer(text: str) -> tuple[str | None, AnswerSource | None]:
    """The answer of a final message and where it came from.

    The last closed ``<answer>`` span if any; else the text after a last ``<answer>`` that was
    never closed (output cut by the token limit); else the whole message, stripped. An empty
    message gives ``(None, None)``.
    """
    tagged = extract_answer(text)
    if tagged is not None:
        return tagged, "tag"
    opens = list(_OPEN.finditer(text))
    if opens:
        rest = text[opens[-1].end() :].strip()
        if rest:
            return rest, "unclosed_tag"
    whole = text.strip()
    return (whole, "whole_text") if whole else (None, None)


def looks_like_tool_call(text: str) -> bool:
    """Whether ``text`` holds what looks like a tool call written out as text."""
    return _CALL_TEXT.search(text) is not None
