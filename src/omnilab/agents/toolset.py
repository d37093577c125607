"""The tools an agent can offer, by name, and how a run builds them.

Names: ``web_search``, ``page_browser`` (:mod:`omnilab.tools.web`), ``code_executor``
(:mod:`omnilab.tools.code`, one sandboxed interpreter per run), ``read_video``, ``read_audio``,
``read_image`` (:mod:`omnilab.tools.perception`) and ``audio_qa``, ``vision_qa``
(:mod:`omnilab.tools.perception_qa`, answered by the ``perception`` role's model). Tool modules
are imported only when a run asks for one of their tools.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from omnilab.agents.base import AgentConfigError
from omnilab.agents.views import Mode
from omnilab.errors import OmnilabError
from omnilab.inputs import FileKind, InputSet
from omnilab.models.capabilities import Capabilities
from omnilab.models.model import Model
from omnilab.tools.base import Tool

__all__ = ["TOOL_NAMES", "ToolEnv", "build_tools", "check_tool_names", "default_tools"]

_WEB = ("web_search", "page_browser")
_CODE = ("code_executor",)
_READ = ("read_video", "read_audio", "read_image")
_QA = ("audio_qa", "vision_qa")
TOOL_NAMES: tuple[str, ...] = (*_WEB, *_CODE, *_READ, *_QA)
"""Every tool name an agent may be given."""

# Which inputs make a perception tool worth offering by default.
_NEEDS: dict[str, frozenset[FileKind]] = {
    "read_video": frozenset({"video"}),
    "read_audio": frozenset({"audio", "video"}),
    "read_image": frozenset({"image"}),
    "audio_qa": frozenset({"audio", "video"}),
    "vision_qa": frozenset({"image", "video"}),
}


@dataclass
class ToolEnv:
    """What tools are built from: the inputs, the model that reads their results, the workspace,
    the perception model, and an exit stack that owns what must be closed after the run."""

    inputs: InputSet
    capabilities: Capabilities
    workspace: Path
    perception: Model
    stack: contextlib.ExitStack


def check_tool_names(names: Collection[str]) -> None:
    """Raise :class:`AgentConfigError` for a name that is not a known tool."""
    unknown = [n for n in names if n not in TOOL_NAMES]
    if unknown:
        raise AgentConfigError(
            f"unknown tool {', '.join(map(repr, unknown))}; tools are: {', '.join(TOOL_NAMES)}"
        )


def default_tools(mode: Mode, inputs: InputSet) -> list[str]:
    """The OmniGAIA tool set for ``mode``: web search, browser and code for every mode, plus the
    perception tools of ``active``/``evidence`` (read_*) or ``tools`` (audio_qa, vision_qa)
    that fit the kinds of inputs present."""
    kinds = {f.kind for f in inputs}
    perception = {
        "active": _READ,
        "evidence": _READ,
        "tools": _QA,
        "audio-as-tool": ("audio_qa",),
        "vision-as-tool": ("vision_qa",),
    }.get(mode, ())
    chosen = [name for name in perception if _NEEDS[name] & kinds]
    return [*chosen, *_WEB, *_CODE]


def _web(names: set[str]) -> list[Tool]:
    from omnilab.tools.web import web_tools

    return [t for t in web_tools() if t.name in names]


def _code(env: ToolEnv) -> list[Tool]:
    from omnilab.sandbox import PythonSession
    from omnilab.tools.code import code_executor_tool

    env.workspace.mkdir(parents=True, exist_ok=True)
    # The interpreter starts on the first call; closing it at the end of the run kills it and
    # everything it started.
    session = env.stack.enter_context(PythonSession(env.workspace))
    return [code_executor_tool(session)]


def _read(env: ToolEnv, names: set[str]) -> list[Tool]:
    from omnilab.tools.perception import active_perception_tools

    built = active_perception_tools(
        env.inputs, capabilities=env.capabilities, workspace=env.workspace
    )
    return [t for t in built if t.name in names]


def _qa(env: ToolEnv, names: set[str]) -> list[Tool]:
    from omnilab.tools.perception_qa import perception_qa_tools

    which = [n for n in _QA if n in names]
    return perception_qa_tools(
        env.inputs, model=env.perception, which=which, workspace=env.workspace
    )


def build_tools(names: Collection[str], env: ToolEnv) -> list[Tool]:
    """The tools named ``names``, in the order given.

    Raises :class:`AgentConfigError` for an unknown name or a tool that cannot be set up (a web
    provider without its settings, a perception model that lacks a modality).
    """
    check_tool_names(names)
    wanted = set(names)
    built: dict[str, Tool] = {}
    try:
        if wanted & set(_WEB):
            built.update((t.name, t) for t in _web(wanted))
        if wanted & set(_CODE):
            built.update((t.name, t) for t in _code(env))
        if wanted & set(_READ):
            built.update((t.name, t) for t in _read(env, wanted))
        if wanted & set(_QA):
            built.update((t.name, t) for t in _qa(env, wanted))
    except OmnilabError as e:
        raise AgentConfigError(f"cannot set up the tools: {e}") from e
    missing = [n for n in names if n not in built]
    if missing:
        raise AgentConfigError(f"tools {', '.join(missing)} could not be built for this task")
    return [built[n] for n in dict.fromkeys(names)]
