"""``KEY=VALUE`` command-line options (``--agent-option``, ``--role``) read into a dict."""

from __future__ import annotations

import json
from typing import Any

from omnilab.errors import OmnilabError

__all__ = ["parse_pairs"]

# A value starting so was meant as JSON: reading it as a plain string hides the typo.
_JSON_OPENERS = ("{", "[", '"')


def parse_pairs(values: list[str] | None, what: str, *, parse_json: bool) -> dict[str, Any]:
    """``["a=1", "b=x"]`` as ``{"a": 1, "b": "x"}``; with ``parse_json`` a value that is JSON is
    read as JSON (a bare word stays a string). Raises :class:`OmnilabError` for an item without
    ``=`` or a key, and with ``parse_json`` for a value that opens like JSON (``{``, ``[``, ``"``)
    but does not parse, naming the column."""
    pairs: dict[str, Any] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OmnilabError(f"{what} {item!r} is not KEY=VALUE")
        parsed: Any = value
        if parse_json:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as e:
                if value.lstrip()[:1] in _JSON_OPENERS:
                    raise OmnilabError(
                        f"{what} {key.strip()}: {value!r} is not valid JSON at column "
                        f"{e.colno} ({e.msg})"
                    ) from None
                parsed = value  # a bare word is a string: -O mode=omniatlas
        pairs[key.strip()] = parsed
    return pairs
