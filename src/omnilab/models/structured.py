"""Structured output: checking an answer against the JSON schema of a ``response_format``."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["schema_problem"]


def schema_problem(text: str, schema: dict[str, Any]) -> str | None:
    """Why ``text`` is not JSON matching ``schema`` (one line), or ``None`` when it is."""
    # Imported here: the validator is needed only by calls that ask for structured output.
    import jsonschema

    try:
        value = json.loads(text)
    except ValueError as e:
        return f"the answer is not JSON ({e})"
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "the top level"
        return f"the answer does not match the schema at {where} ({e.message})"
    except jsonschema.SchemaError as e:
        return f"the response format's schema is not a valid JSON schema ({e.message})"
    return None
