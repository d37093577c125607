"""The one head-and-tail cut of long texts that omnilab shows to models and judges.

A long tool observation, an analyst's trace or a verifier's view keeps its start (what was asked,
the first results) and its end (the latest output, the answer) with a marker saying how much of
the middle was left out. (The sandbox cuts its byte streams the same way while they are read,
in :mod:`omnilab.sandbox._headtail`; code running inside the sandbox cannot import omnilab.)
"""

from __future__ import annotations

__all__ = ["cut_text"]


def cut_text(text: str, limit: int, *, head_share: float = 2 / 3, what: str = "characters") -> str:
    """``text`` when it has at most ``limit`` characters, else its first ``head_share`` of
    ``limit`` characters and its last ones, joined by ``[... N <what> cut ...]``."""
    if len(text) <= limit:
        return text
    head = int(limit * head_share)
    tail = limit - head
    cut = len(text) - head - tail
    end = text[-tail:] if tail > 0 else ""
    return f"{text[:head]}\n[... {cut} {what} cut ...]\n{end}"
