"""Which tools an agent offers: the OmniGAIA default set per mode, and building the tools a run
asked for with errors in the agents' terms.

The catalogue itself (names, factories, entry points) is :mod:`omnilab.tools.registry`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from omnilab.agents.base import AgentConfigError
from omnilab.agents.views import Mode
from omnilab.inputs import FileKind, InputSet
from omnilab.tools.base import Tool
from omnilab.tools.registry import ToolConfigError, ToolEnv, ToolRef, check_tools
from omnilab.tools.registry import build_tools as _build

__all__ = ["ToolEnv", "ToolRef", "build_tools", "check_tool_names", "default_tools"]

_WEB = ("web_search", "page_browser")
_CODE = ("code_executor",)
_READ = ("read_video", "read_audio", "read_image")
_QA = ("audio_qa", "vision_qa")

# Which inputs make a perception tool worth offering by default.
_NEEDS: dict[str, frozenset[FileKind]] = {
    "read_video": frozenset({"video"}),
    "read_audio": frozenset({"audio", "video"}),
    "read_image": frozenset({"image"}),
    "audio_qa": frozenset({"audio", "video"}),
    "vision_qa": frozenset({"image", "video"}),
}


def check_tool_names(refs: Collection[ToolRef]) -> None:
    """Raise :class:`AgentConfigError` for a name that is not a known tool."""
    try:
        check_tools(refs)
    except ToolConfigError as e:
        raise AgentConfigError(str(e)) from None


def default_tools(
    mode: Mode,
    inputs: InputSet,
    *,
    needs: Mapping[str, frozenset[FileKind] | None] | None = None,
) -> list[str]:
    """The OmniGAIA tool set for ``mode``: web search, browser and code for every mode, plus the
    perception tools of ``active``/``evidence`` (read_*) or ``tools`` (audio_qa, vision_qa)
    that fit the kinds of inputs present. ``needs`` replaces the input kinds that make a tool
    worth offering, by tool name (``None``: always offered)."""
    kinds = {f.kind for f in inputs}
    wanted: dict[str, frozenset[FileKind] | None] = {**_NEEDS, **(needs or {})}
    perception = {
        "active": _READ,
        "evidence": _READ,
        "tools": _QA,
        "audio-as-tool": ("audio_qa",),
        "vision-as-tool": ("vision_qa",),
    }.get(mode, ())
    chosen = [name for name in perception if (need := wanted[name]) is None or need & kinds]
    return [*chosen, *_WEB, *_CODE]


def build_tools(refs: Sequence[ToolRef], env: ToolEnv) -> list[Tool]:
    """The tools ``refs`` name (names, ``module:attr`` or :class:`Tool` objects), in order.

    Raises :class:`AgentConfigError` for an unknown name or a tool that cannot be set up (a web
    provider without its settings, a perception model that lacks a modality).
    """
    try:
        return _build(refs, env)
    except ToolConfigError as e:
        raise AgentConfigError(str(e)) from None
