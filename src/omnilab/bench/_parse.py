"""Parsers shared by the dataset adapters and the scorers: options, spans and numbers.

The same parser reads a dataset's ground truth and a model's prediction, so a format the
adapter accepts is a format the scorer accepts.
"""

from __future__ import annotations

import contextlib
import json
import re
import string

from omnilab.bench.task import Span

__all__ = ["merge_spans", "option_prefix", "parse_number", "parse_options", "parse_spans"]

_LETTERS = string.ascii_uppercase
# "A. text", "(A) text", "A) text", "A: text", "[A] text"
_OPTION_PREFIX = re.compile(r"^\s*[\(\[]?([A-Za-z])[\)\]\.:：]\s*(.*)$", re.DOTALL)
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_PAIR = re.compile(
    r"(?P<a>\d+(?:\.\d+)?)\s*(?:s|sec|seconds)?\s*(?:-|–|to|~|,)\s*(?P<b>\d+(?:\.\d+)?)"
)


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


def _pairs(value: object) -> list[Span] | None:
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return [(float(value[0]), float(value[1]))]
    if isinstance(value, list | tuple) and value:
        spans: list[Span] = []
        for item in value:
            inner = _pairs(item)
            if inner is None or len(inner) != 1:
                return None
            spans.extend(inner)
        return spans
    return None


def parse_spans(value: object) -> tuple[Span, ...] | None:
    """Time spans from ``[[s, e], ...]``, ``[s, e]``, their JSON text, or text like ``10.5s - 20s``.

    Returns ``None`` when nothing parses or a span ends before it starts.
    """
    if isinstance(value, str):
        text = value.strip()
        spans: list[Span] | None = None
        with contextlib.suppress(ValueError):
            spans = _pairs(json.loads(text))
        if spans is None:
            found = [(float(m["a"]), float(m["b"])) for m in _PAIR.finditer(text)]
            spans = found or None
    else:
        spans = _pairs(value)
    if not spans or any(end < start or start < 0 for start, end in spans):
        return None
    return tuple(spans)


def merge_spans(spans: tuple[Span, ...] | list[Span]) -> list[Span]:
    """Spans sorted and with overlapping or touching ones merged (so no time counts twice)."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def parse_number(value: object) -> float | None:
    """A number from a JSON number or text: the last number in ``"about 12.5 km"``, ``"1,234"``.

    Units, currency signs and thousands separators are ignored; a trailing ``%`` is kept as a
    plain number (``"45%"`` -> 45.0). The last number is taken because answers tend to end with
    the result ("from 2012 to 2014, so 2 years" -> 2).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    matches = _NUMBER.findall(value.replace("−", "-"))
    if not matches:
        return None
    try:
        return float(matches[-1].replace(",", ""))
    except ValueError:
        return None
