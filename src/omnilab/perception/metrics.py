"""Error rates for checking ASR and OCR output against a reference (used by tests and bench)."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["char_error_rate", "edit_distance", "normalise_words", "word_error_rate"]

_NOT_WORD = re.compile(r"[^\w\s']")


def normalise_words(text: str) -> list[str]:
    """Lower-case words without punctuation (apostrophes inside words kept)."""
    return [w.strip("'") for w in _NOT_WORD.sub(" ", text.casefold()).split() if w.strip("'")]


def edit_distance(ref: Sequence[object], hyp: Sequence[object]) -> int:
    """Levenshtein distance (substitutions, insertions, deletions) between two sequences."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word edits needed to turn the hypothesis into the reference, per reference word.

    Case and punctuation are ignored. An empty reference gives 0.0 for an empty hypothesis and
    1.0 otherwise.
    """
    ref, hyp = normalise_words(reference), normalise_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)


def char_error_rate(reference: str, hypothesis: str) -> float:
    """Character edits per reference character, ignoring case and runs of whitespace."""
    ref = " ".join(reference.casefold().split())
    hyp = " ".join(hypothesis.casefold().split())
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)
