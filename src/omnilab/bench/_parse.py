"""Multiple-choice options, parsed the same way for a dataset's items and a model's reply.

Numbers and time spans have their own modules (:mod:`omnilab.bench.scoring.numbers`,
:mod:`omnilab.bench.scoring.spans`), shared by the adapters and the scorers in the same way: a
format the adapter accepts is a format the scorer accepts.
"""

from __future__ import annotations

import re
import string

__all__ = ["option_prefix", "parse_options"]

_LETTERS = string.ascii_uppercase
# "A. text", "(A) text", "A) text", "A: text", "[A] text"
_OPTION_PREFIX = re.compile(r"^\s*[\(\[]?([A-Za-z])[\)\]\.:：]\s*(.*)$", re.DOTALL)


def option_prefix(text: str) -> tuple[str, str] | None:
    """``("B", "Paris")`` for ``"B. Paris"``, ``"(b) Paris"``, ``"B) Paris"``; else ``None``."""
    match = _OPTION_PREFIX.match(text)
    return (match.group(1).upper(), match.group(2).strip()) if match else None


def parse_options(value: object) -> dict[str, str] | None:
    """Options by letter from a list (``["A. Paris", ...]`` or plain texts) or a letter -> text map."""
    if isinstance(value, dict):
        options = {str(k).strip().upper(): str(v).strip() for k, v in value.items()}
        return options or None
    if isinstance(value, str):
        # Some files keep options in one string, one per line.
        value = [line for line in value.splitlines() if line.strip()]
    if not isinstance(value, list) or not value:
        return None
    texts = [str(v).strip() for v in value]
    prefixed = [_OPTION_PREFIX.match(t) for t in texts]
    letters = [m.group(1).upper() if m else None for m in prefixed]
    if all(letters) and len(set(letters)) == len(letters):
        return {
            str(letter): m.group(2).strip()
            for letter, m in zip(letters, prefixed, strict=True)
            if m
        }
    return {_LETTERS[i]: t for i, t in enumerate(texts[: len(_LETTERS)])}
