"""The token traces of a trajectory's model calls, read for a trainer without the rest.

:func:`~omnilab.trajectory.store.read_trajectory` validates every event and rebuilds each model
call's full input (its messages, tools and media); rows for a trainer need only each call's id
and :class:`~omnilab.models.token_trace.TokenTrace`. :func:`read_token_calls` parses only the
model-call lines that hold a trace and validates only the trace: the same answers as
``read_trajectory(path).model_calls`` at a fraction of the CPU (``bench/rollout.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from omnilab.models.token_trace import TokenTrace
from omnilab.trajectory.store import TrajectoryError, read_lines

__all__ = ["read_token_calls"]


def read_token_calls(path: Path) -> list[tuple[str, TokenTrace]]:
    """``(event id, trace)`` of each model call with a token trace, in file order; a cut-off
    last line is skipped. Raises :class:`~omnilab.trajectory.store.TrajectoryError` as
    :func:`~omnilab.trajectory.store.read_trajectory` does (an unreadable, empty or foreign
    file, a damaged line before the last)."""
    p = Path(path)
    _, lines = read_lines(p)
    found: list[tuple[str, TokenTrace]] = []
    for number, line in enumerate(lines[1:], start=2):
        if b'"model_call"' not in line or b'"tokens"' not in line:
            continue  # no model call with a trace on this line (fast path: no parsing)
        try:
            raw = json.loads(line)
            tokens = (raw.get("output") or {}).get("tokens")
            if raw.get("kind") != "model_call" or tokens is None:
                continue
            found.append((str(raw["id"]), TokenTrace.model_validate(tokens)))
        except (ValueError, KeyError, AttributeError, ValidationError) as e:
            if number == len(lines):
                break  # the run stopped while writing it
            raise TrajectoryError(f"{p} line {number} is not a valid event: {e}") from None
    return found
