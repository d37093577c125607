"""Counts in messages: ``1 step``, ``2 steps``; the one helper every message uses."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``n`` and ``noun``, or its plural form ``many`` (default ``noun + "s"``) unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"
