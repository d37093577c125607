"""Cutting long audio into pieces an ASR backend can take, at silences found by VAD."""

from __future__ import annotations

import math

from omnilab.perception.types import SpeechSegment

__all__ = ["plan_chunks"]

# A pause this long ends a piece even when the next segment would fit: backends then never
# see long silences (where whisper models tend to invent text).
MAX_GAP_SECONDS = 2.0


def plan_chunks(
    speech: list[SpeechSegment], *, max_seconds: float, duration: float
) -> list[tuple[float, float]]:
    """Group consecutive speech segments into ``(start, end)`` pieces of at most ``max_seconds``.

    Pieces start and end inside the pauses between segments, so no word is cut; a single segment
    longer than ``max_seconds`` (speech without a pause) is split into equal parts, the only
    case where a cut can fall inside a word. Pauses over two seconds always end a piece.
    """
    pieces: list[tuple[float, float]] = []
    group: list[SpeechSegment] = []
    for seg in speech:
        if group and (
            seg.end - group[0].start > max_seconds or seg.start - group[-1].end > MAX_GAP_SECONDS
        ):
            pieces.append((group[0].start, group[-1].end))
            group = []
        group.append(seg)
    if group:
        pieces.append((group[0].start, group[-1].end))
    out: list[tuple[float, float]] = []
    for start, end in pieces:
        end = min(end, duration)
        n = max(1, math.ceil((end - start) / max_seconds - 1e-9))
        step = (end - start) / n
        out.extend((start + i * step, start + (i + 1) * step) for i in range(n))
    return [(s, e) for s, e in out if e > s]
