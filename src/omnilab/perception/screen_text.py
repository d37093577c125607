"""On-screen text across keyframes: the same caption read on many frames is listed once."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from omnilab.perception.evidence import ScreenText
from omnilab.perception.types import TextBox

__all__ = ["merge_screen_text", "normalise", "read_frames", "same_picture", "same_text"]

# Frames are compared as 480 px wide colour pictures: two frames of one static slide differ
# nowhere by more than 40 levels (coding noise), while slides that differ by one small word or
# digit do on tens to hundreds of pixels. Averaging into blocks or greyscale hid such changes
# (different slides of a 10-minute talk came out "the same").
_PICTURE_WIDTH = 480
_CHANGED_LEVELS = 40
_MAX_CHANGED_PIXELS = 16

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


def _signature(image: Image.Image) -> NDArray[np.int16]:
    w, h = image.size
    height = max(1, round(_PICTURE_WIDTH * h / max(1, w)))
    small = image.convert("RGB").resize((_PICTURE_WIDTH, height), Image.Resampling.BOX)
    return np.asarray(small, dtype=np.int16)


def same_picture(a: Image.Image, b: Image.Image) -> bool:
    """Whether two frames show the same picture (the same slide twice), up to coding noise."""
    return _close(_signature(a), _signature(b))


def _close(a: NDArray[np.int16], b: NDArray[np.int16]) -> bool:
    if a.shape != b.shape:
        return False
    changed = int((np.abs(a - b).max(axis=2) > _CHANGED_LEVELS).sum())
    return changed <= _MAX_CHANGED_PIXELS


def read_frames(
    frames: Sequence[tuple[float, Image.Image]], read: Callable[[Image.Image], list[TextBox]]
) -> list[tuple[float, list[TextBox]]]:
    """``(time, read(image))`` per frame, reading each distinct picture once.

    OCR is the costly part of a digest; a slide shown for minutes gives many identical keyframes,
    so a frame that shows the same picture as one already read reuses that reading.
    """
    done: list[tuple[NDArray[np.int16], list[TextBox]]] = []
    out: list[tuple[float, list[TextBox]]] = []
    for when, image in frames:
        sig = _signature(image)
        boxes = next((b for s, b in done if _close(s, sig)), None)
        if boxes is None:
            boxes = read(image)
            done.append((sig, boxes))
        out.append((when, boxes))
    return out
