"""The exact OmniGAIA schemas of ``web_search`` and ``page_browser``.

They live in ``omnigaia_web_tools.json`` beside this module, which names their source: the paper
names the tools without printing their schemas, so they come from the authors' released code.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any, Literal

__all__ = ["omnigaia_tool_schema"]

ToolName = Literal["web_search", "page_browser"]


@cache
def _load() -> dict[str, Any]:
    text = resources.files("omnilab.tools.web").joinpath("omnigaia_web_tools.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def omnigaia_tool_schema(name: ToolName, *, fresh: bool = True) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` of tool ``name``: a fresh copy, or with
    ``fresh=False`` the one loaded copy, which the caller must not change (the tool factories,
    which run for every task and only read it)."""
    return copy.deepcopy(_load()[name]) if fresh else _load()[name]
