"""On-screen text across keyframes: the same caption read on many frames is listed once."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from omnilab.perception.evidence import ScreenText
from omnilab.perception.types import TextBox

__all__ = ["merge_screen_text", "normalise", "same_text"]

# Two readings this similar (difflib ratio of normalised text) are the same text; OCR of one
# caption on two frames often differs by a character or two. Their numbers must match exactly:
# "Part 1" and "Part 2", or two scores, prices or dates, are different text.
_SAME = 0.8
_PUNCT = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"\d+")


def normalise(text: str) -> str:
    """Case-folded text without punctuation and with single spaces: the identity of a reading."""
    return _SPACE.sub(" ", _PUNCT.sub(" ", text.casefold())).strip()


def same_text(a: str, b: str) -> bool:
    """Whether two normalised readings are one text (same numbers, nearly the same letters)."""
    if a == b:
        return True
    if _NUMBER.findall(a) != _NUMBER.findall(b):
        return False
    return SequenceMatcher(None, a, b).ratio() >= _SAME


@dataclass
class _Line:
    key: str
    first: TextBox
    best: TextBox
    times: list[float] = field(default_factory=list)


def merge_screen_text(readings: Sequence[tuple[float | None, list[TextBox]]]) -> list[ScreenText]:
    """Merge the text boxes read on each ``(timestamp, boxes)`` frame into distinct lines.

    Each distinct line keeps every time it was seen and its best-confidence spelling; lines are
    in the order they first appeared (frames in time order, boxes in reading order).
    """
    lines: list[_Line] = []
    for when, boxes in readings:
        for box in boxes:
            key = normalise(box.text)
            if not key:
                continue
            line = next((x for x in lines if same_text(x.key, key)), None)
            if line is None:
                line = _Line(key=key, first=box, best=box)
                lines.append(line)
            elif box.confidence > line.best.confidence:
                line.best = box
            if when is not None and when not in line.times:
                line.times.append(when)
    return [
        ScreenText(
            text=x.best.text,
            times=sorted(x.times),
            confidence=round(x.best.confidence, 3),
            box=x.first.box,
        )
        for x in lines
    ]
