"""Time spans from an answer, the one rule the grounding scorer and the adapters share.

OmniAgent asks for "a JSON array of one or more pairs, e.g. "[[10.5, 20.0], [35.0, 40.0]]""
(Appendix B.5); models also write spans the way people do. Read, in order:

1. JSON: ``[[s, e], ...]``, ``[s, e]``, pairs of time strings (``[["0:01", "0:40"]]``) or
   ``{"start": s, "end": e}`` objects (one or a list).
2. Text: every pair ``T1 <sep> T2`` where a time ``T`` is seconds (``12.5``, ``12.5s``,
   ``12.5 seconds``), minutes (``1.5 min``), ``m:ss`` or ``h:mm:ss`` (with decimals:
   ``5:31.9``), and ``<sep>`` is ``-``, ``–``, ``~``, ``,``, ``to``, ``until``, ``and`` or an arrow,
   optionally after ``from``/``between``/``start:`` (``From 00:01 to 00:40``,
   ``between 1.4 and 40 seconds``, ``10-20s``, ``[10.5, 20], [35, 40]``). A unit written only
   after the second time applies to both (``1-2 min``).
3. Digits inside identifiers, file names and paths are never times (``c110-4382``, ``...mp4``,
   ``videos/x_720_900.mp4``): a time must not touch a letter, digit, ``_``, ``.``, ``:``, ``/``
   or ``-`` on either side except through the pair's own separator.

A span that ends before it starts, or starts before 0, makes the answer unreadable (``None``):
a grader would not guess which end was meant.
"""

from __future__ import annotations

import contextlib
import json
import re

from omnilab.bench.scoring.numbers import blank_names
from omnilab.bench.task import Span

__all__ = ["merge_spans", "parse_spans", "parse_time"]

_TIME = r"\d+(?::\d{2}){1,2}(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
_UNIT = r"s|secs?|seconds?|mins?|minutes?"
_LEFT = r"(?<![\w.:/\\-])"
_RIGHT = r"(?![\w:/\\-]|\.\w)"
_SEP = r"-|–|—|~|,|to|until|till|and|→|->"
_PAIR = re.compile(
    rf"{_LEFT}(?:(?:from|between)\s+|start(?:s|ing)?(?:\s+time)?\s*(?:at|[:=])?\s*)?"
    rf"(?P<a>{_TIME})(?:\s*(?P<au>{_UNIT})\b)?"
    rf"\s*(?:{_SEP})\s*(?:end(?:s|ing)?(?:\s+time)?\s*(?:at|[:=])?\s*)?"
    rf"(?P<b>{_TIME})(?:\s*(?P<bu>{_UNIT})\b)?{_RIGHT}",
    re.IGNORECASE,
)
_CLOCK_OR_SECONDS = re.compile(rf"^\s*({_TIME})\s*({_UNIT})?\s*$", re.IGNORECASE)


def parse_time(text: str, unit: str | None = None) -> float | None:
    """Seconds from ``"12.5"``, ``"12.5s"``, ``"1.5 min"``, ``"5:31.9"`` or ``"1:02:03"``."""
    match = _CLOCK_OR_SECONDS.match(text)
    if match is None:
        return None
    value, unit = match.group(1), match.group(2) or unit
    parts = value.split(":")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    if len(parts) == 1 and unit is not None and unit.lower().startswith("min"):
        seconds *= 60
    return seconds


def _as_seconds(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return parse_time(value)
    return None


def _json_spans(value: object) -> list[Span] | None:
    """Spans from a decoded JSON value, or ``None`` when it is not a span or a list of them."""
    if isinstance(value, dict):
        start = next((value[k] for k in ("start", "start_time", "begin") if k in value), None)
        end = next((value[k] for k in ("end", "end_time", "stop") if k in value), None)
        a, b = _as_seconds(start), _as_seconds(end)
        return [(a, b)] if a is not None and b is not None else None
    if not isinstance(value, list | tuple) or not value:
        return None
    if len(value) == 2 and not any(isinstance(v, list | tuple | dict) for v in value):
        a, b = _as_seconds(value[0]), _as_seconds(value[1])
        return [(a, b)] if a is not None and b is not None else None
    spans: list[Span] = []
    for item in value:
        inner = _json_spans(item)
        if inner is None or len(inner) != 1:
            return None
        spans.extend(inner)
    return spans


def _text_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    for match in _PAIR.finditer(blank_names(text)):
        unit = match["bu"]
        a = parse_time(match["a"], match["au"] or unit)
        b = parse_time(match["b"], unit)
        if a is not None and b is not None:
            spans.append((a, b))
    return spans


def parse_spans(value: object) -> tuple[Span, ...] | None:
    """The spans of an answer (see the module docstring), or ``None`` when none can be read."""
    spans: list[Span] | None = None
    if isinstance(value, str):
        text = value.strip()
        with contextlib.suppress(ValueError):
            spans = _json_spans(json.loads(text))
        if spans is None:
            spans = _text_spans(text) or None
    else:
        spans = _json_spans(value)
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
