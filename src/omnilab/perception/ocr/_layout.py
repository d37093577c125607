"""Reading order for OCR results: rows top to bottom, boxes left to right, word pieces joined.

Detectors often return one line as several boxes (wide spaces in monospaced fonts, gaps between
words) whose tops differ by a few pixels (``report`` versus ``scene``). Boxes are put in one
row when their vertical spans overlap by at least half the smaller height, and neighbours in a
row closer than :data:`JOIN_GAP` line heights become one line.
"""

from __future__ import annotations

from omnilab.perception.types import TextBox

__all__ = ["JOIN_GAP", "reading_order"]

JOIN_GAP = 0.5
"""Largest horizontal gap, in line heights, between two pieces of one line."""


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return min(a[1], b[1]) - max(a[0], b[0])


def reading_order(boxes: list[TextBox]) -> list[TextBox]:
    """``boxes`` grouped into rows (top to bottom), each left to right, with pieces joined."""
    rows: list[list[TextBox]] = []
    spans: list[tuple[float, float]] = []
    for box in sorted(boxes, key=lambda b: (b.box[1] + b.box[3]) / 2):
        span = (box.box[1], box.box[3])
        height = span[1] - span[0]
        for i, row_span in enumerate(spans):
            smaller = min(height, row_span[1] - row_span[0])
            if _overlap(span, row_span) >= 0.5 * smaller:
                rows[i].append(box)
                spans[i] = (min(row_span[0], span[0]), max(row_span[1], span[1]))
                break
        else:
            rows.append([box])
            spans.append(span)
    ordered = sorted(zip(spans, rows, strict=True), key=lambda sr: sr[0][0])
    return [line for _, row in ordered for line in _join(sorted(row, key=lambda b: b.box[0]))]


def _join(row: list[TextBox]) -> list[TextBox]:
    out: list[TextBox] = []
    for box in row:
        if out:
            prev = out[-1]
            height = max(prev.box[3] - prev.box[1], box.box[3] - box.box[1])
            if box.box[0] - prev.box[2] <= JOIN_GAP * height:
                out[-1] = _merge(prev, box)
                continue
        out.append(box)
    return out


def _merge(a: TextBox, b: TextBox) -> TextBox:
    left, top = min(a.box[0], b.box[0]), min(a.box[1], b.box[1])
    right, bottom = max(a.box[2], b.box[2]), max(a.box[3], b.box[3])
    # Confidence weighted by characters: a long confident piece outweighs a short unsure one.
    weight = len(a.text) + len(b.text)
    conf = (a.confidence * len(a.text) + b.confidence * len(b.text)) / max(1, weight)
    return TextBox(
        text=f"{a.text} {b.text}",
        box=(left, top, right, bottom),
        confidence=conf,
        polygon=[(left, top), (right, top), (right, bottom), (left, bottom)],
    )
