"""Perception results cached as JSON in the media cache, keyed by source content and options."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from pydantic import TypeAdapter, ValidationError

from omnilab.media.cache import MediaCache

__all__ = ["SCHEMA", "cached"]

SCHEMA = 1
"""Bumped when a cached result's shape or the way it is computed changes (old entries miss)."""

T = TypeVar("T")


def cached(
    source: Path,
    op: str,
    params: Mapping[str, object],
    kind: TypeAdapter[T],
    compute: Callable[[], T],
) -> tuple[T, bool]:
    """``compute()``'s result for ``op`` on ``source`` with ``params``, and whether it was a hit."""
    cache = MediaCache.default()
    key = cache.key(source, f"perception.{op}", {**params, "schema": SCHEMA})
    hit = cache.get(key, ".json")
    if hit is not None:
        try:
            return kind.validate_json(hit.read_bytes()), True
        except (ValidationError, OSError, json.JSONDecodeError):
            hit.unlink(missing_ok=True)  # a damaged or foreign entry: recompute it
    value = compute()
    data = kind.dump_json(value)

    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    cache.get_or_create(key, ".json", write)
    return value, False
