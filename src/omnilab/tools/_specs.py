"""The exact tool schemas and prompts of the papers, kept as data files that name their source."""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["load_prompt", "omnigaia_function"]


@cache
def _omnigaia() -> dict[str, Any]:
    path = resources.files("omnilab.tools").joinpath("schemas").joinpath("omnigaia_perception.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def omnigaia_function(name: str, *, fresh: bool = True) -> dict[str, Any]:
    """The OmniGAIA function definition ``name`` (``name``, ``description``, ``parameters``).

    A fresh copy each time, so a caller that edits it cannot change the next tool built; with
    ``fresh=False`` the one loaded copy, for callers that only read it (tool factories that run
    for every task: the copy was most of building the read_* tools).
    """
    spec = _omnigaia().get(name)
    if name == "source" or not isinstance(spec, dict):
        raise KeyError(f"no OmniGAIA function schema named {name!r}")
    return copy.deepcopy(spec) if fresh else spec


@cache
def load_prompt(name: str) -> str:
    """The prompt in ``tools/prompts/<name>.txt``, without its ``#`` header lines."""
    path = resources.files("omnilab.tools").joinpath("prompts").joinpath(f"{name}.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    start = 0
    while start < len(lines) and lines[start].startswith("#"):
        start += 1
    return "\n".join(lines[start:]).strip()
