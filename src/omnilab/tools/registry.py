"""The tool catalogue: tools by name, each built for one run from a :class:`ToolEnv`.

A tool is registered as a factory ``(env: ToolEnv) -> Tool`` (or as a ready :class:`Tool`, for
one that needs nothing from the run). Built-ins: ``web_search``, ``page_browser``
(:mod:`omnilab.tools.web`), ``code_executor`` (:mod:`omnilab.tools.code`, one sandboxed
interpreter per run), ``read_video``, ``read_audio``, ``read_image``
(:mod:`omnilab.tools.perception`) and ``audio_qa``, ``vision_qa``
(:mod:`omnilab.tools.perception_qa`, answered by the ``perception`` role's model). Their modules
are imported only when a run asks for one of their tools.

A package adds a tool without editing omnilab through the entry-point group ``omnilab.tools``;
wherever a tool name is accepted, ``"package.module:attr"`` (a factory or a :class:`Tool`) and a
:class:`Tool` object work too.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from omnilab._memo import IdentityMemo
from omnilab.errors import OmnilabError
from omnilab.inputs import InputSet
from omnilab.models.capabilities import Capabilities
from omnilab.models.model import Model
from omnilab.models.types import ModelOutput, ToolSpec
from omnilab.registry import Registry, import_target
from omnilab.tools.base import Tool

__all__ = [
    "TOOLS",
    "ToolConfigError",
    "ToolEnv",
    "ToolFactory",
    "ToolInfo",
    "ToolRef",
    "build_tools",
    "check_tools",
    "describe_tools",
    "register_tool",
    "tool_name",
    "tool_names",
]

V = TypeVar("V")


class ToolConfigError(OmnilabError):
    """An unknown tool, or one that cannot be set up for this run."""


@dataclass
class ToolEnv:
    """What a run offers the tools it builds."""

    inputs: InputSet
    """The task's input files, by id."""
    model: Model
    """The agent's model (bound to the run): tool results are made for what it accepts."""
    workspace: Path
    """The task's private folder (sandboxed code, derived frames and clips)."""
    stack: contextlib.ExitStack
    """Owns what must be closed when the run ends (interpreters, connections)."""
    roles: Mapping[str, Model] = field(default_factory=dict)
    """Other models by role, bound to the run (``perception`` answers audio_qa/vision_qa)."""
    budgets: Mapping[str, Any] = field(default_factory=dict)
    """The run's budgets (``Budgets.model_dump()``), for tools that pace themselves."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Options of tool families for this run, by family: ``read`` (the read_* tools, a
    :class:`~omnilab.tools.perception.ReadOptions` or its fields)."""
    _shared: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def capabilities(self) -> Capabilities:
        """What the agent's model accepts natively."""
        return self.model.capabilities

    def role(self, name: str) -> Model:
        """The model bound to role ``name``, else the agent's model."""
        return self.roles.get(name, self.model)

    def shared(self, key: str, make: Callable[[], V]) -> V:
        """``make()`` once per run: tools of one family share it (one index, one reader)."""
        if key not in self._shared:
            self._shared[key] = make()
        value: V = self._shared[key]
        return value


ToolFactory = Callable[[ToolEnv], Tool]
ToolRef = str | Tool
"""A tool as callers name it: a registered name, ``"module:attr"``, or a :class:`Tool`."""


def _as_factory(value: Any) -> ToolFactory:
    if isinstance(value, Tool):
        return lambda env: value
    if callable(value):
        return value  # type: ignore[no-any-return]
    raise TypeError(f"expected a Tool or a factory taking a ToolEnv, got {type(value).__name__}")


def _pick(tools: Sequence[Tool], name: str) -> Tool:
    return next(t for t in tools if t.name == name)


# The web pair of each search provider, made once per process for the settings in force and
# shared by every run: it holds nothing of a run (results and pages are cached on disk, the
# corpus index opens once), and making it anew for each task was an eighth of the event loop's
# work for a one-call task. Kept by the identity of the settings and of the provider's factory:
# new settings or a provider registered again make a new pair.
_WEB_PAIRS: dict[str, IdentityMemo[list[Tool]]] = {}


def _web(name: str) -> ToolFactory:
    def build(env: ToolEnv) -> Tool:
        from omnilab.config import get_settings
        from omnilab.tools.search_choice import chosen_search
        from omnilab.tools.web.providers import PROVIDERS

        # One pair, sharing one index, so corpus:// ids found by search open in the browser.
        provider = chosen_search()  # the run's --search, else web.search_provider
        made_by = (get_settings(), PROVIDERS.get(provider))
        pairs = _WEB_PAIRS.get(provider) or _WEB_PAIRS.setdefault(provider, IdentityMemo(8))
        return _pick(pairs.get(made_by, lambda: _web_pair(provider)), name)

    return build


def _web_pair(provider: str) -> list[Tool]:
    from omnilab.tools.web import web_tools

    return web_tools(provider)


def _code_executor(env: ToolEnv) -> Tool:
    from omnilab.sandbox import PythonSession
    from omnilab.tools.code import code_executor_tool

    # The interpreter starts on the first call, in the workspace the tool makes then (most
    # tasks never run code: no folder for them); closing it at the end of the run kills it
    # and everything it started.
    session = env.stack.enter_context(PythonSession(env.workspace))
    return code_executor_tool(session)


def _read(name: str) -> ToolFactory:
    def build(env: ToolEnv) -> Tool:
        from omnilab.tools._read_options import ReadOptions
        from omnilab.tools.perception import active_perception_tools

        def make() -> list[Tool]:
            given = env.options.get("read")
            options = given if isinstance(given, ReadOptions) else ReadOptions(**(given or {}))
            return active_perception_tools(
                env.inputs, capabilities=env.capabilities, workspace=env.workspace, options=options
            )

        return _pick(env.shared("read", make), name)

    return build


def _qa(name: str) -> ToolFactory:
    def build(env: ToolEnv) -> Tool:
        from omnilab.tools.perception_qa import perception_qa_tools

        # Built one by one: the perception model need only take the modality of the tool asked.
        tools = perception_qa_tools(
            env.inputs, model=env.role("perception"), which=[name], workspace=env.workspace
        )
        return tools[0]

    return build


TOOLS: Registry[ToolFactory] = Registry(
    "tool",
    group="omnilab.tools",
    entries={
        "web_search": _web("web_search"),
        "page_browser": _web("page_browser"),
        "code_executor": _code_executor,
        "read_video": _read("read_video"),
        "read_audio": _read("read_audio"),
        "read_image": _read("read_image"),
        "audio_qa": _qa("audio_qa"),
        "vision_qa": _qa("vision_qa"),
    },
    error=ToolConfigError,
    coerce=_as_factory,
)
"""Every tool factory by name."""


def register_tool(name: str, factory: str | ToolFactory | Tool) -> None:
    """Add or replace tool ``name``: a factory taking a :class:`ToolEnv`, a :class:`Tool`, or
    ``"module:attr"`` naming either (imported when a run first asks for it)."""
    TOOLS.register(name, factory if isinstance(factory, str) else _as_factory(factory))


def tool_names() -> list[str]:
    """Every registered tool name (built-ins first, then plugins')."""
    return TOOLS.names()


def tool_name(ref: ToolRef) -> str:
    """The name ``ref`` is known by in trajectories and configs."""
    return ref.name if isinstance(ref, Tool) else ref


def check_tools(refs: Collection[ToolRef]) -> None:
    """Raise :class:`ToolConfigError` for a name that is neither registered nor ``module:attr``
    (nothing is imported; a bad ``module:attr`` fails when the tool is built)."""
    unknown = [r for r in refs if isinstance(r, str) and r not in TOOLS and ":" not in r]
    if unknown:
        known = ", ".join(TOOLS.names())
        raise ToolConfigError(
            f"unknown tool {', '.join(map(repr, unknown))}; known tools: {known} "
            "(or give package.module:attr)"
        )


def _factory(ref: str) -> ToolFactory:
    if ref in TOOLS or ":" not in ref:
        return TOOLS.get(ref)
    try:
        return _as_factory(import_target(ref))
    except Exception as e:
        raise ToolConfigError(f"tool {ref!r} cannot be loaded: {type(e).__name__}: {e}") from e


def build_tools(refs: Sequence[ToolRef], env: ToolEnv) -> list[Tool]:
    """The tools ``refs`` name, built for ``env``, in the order given (duplicates dropped).

    Raises :class:`ToolConfigError` for an unknown name, a tool that cannot be set up (a web
    provider without its settings, a perception model that lacks a modality) or two tools with
    one name.
    """
    check_tools(refs)
    built: dict[str, Tool] = {}
    for ref in refs:
        if isinstance(ref, Tool):
            made = ref
        else:
            try:
                made = _factory(ref)(env)
            except ToolConfigError:
                raise
            except OmnilabError as e:
                raise ToolConfigError(f"cannot set up tool {ref}: {e}") from e
            if not isinstance(made, Tool):
                raise ToolConfigError(f"tool {ref!r}: its factory returned {type(made).__name__}")
        if built.get(made.name, made) is not made:
            raise ToolConfigError(f"two different tools are named {made.name!r}")
        built[made.name] = made
    return list(built.values())


@dataclass(frozen=True)
class ToolInfo:
    """What ``omnilab tools`` shows about one tool."""

    name: str
    source: str
    spec: ToolSpec | None
    error: str | None = None


class _ListingAdapter:
    """A model that accepts every modality and answers nothing: tools are built, never run."""

    capabilities = Capabilities(image=True, audio=True, video=True, documents=True)
    endpoint = "listing"
    secrets: tuple[str, ...] = ()

    async def generate(self, messages: Any, tools: Any, config: Any) -> ModelOutput:
        raise RuntimeError("the listing model is never called")


def describe_tools(names: Sequence[str] | None = None) -> list[ToolInfo]:
    """Each tool (default: every registered one) with its schema, built in a throwaway run with
    no inputs; a tool that cannot be built there is listed with its error instead."""
    infos: list[ToolInfo] = []
    model = Model(_ListingAdapter(), name="listing")
    with tempfile.TemporaryDirectory(prefix="omnilab-tools-") as tmp, contextlib.ExitStack() as st:
        env = ToolEnv(InputSet([]), model, Path(tmp), st)
        for name in names if names is not None else TOOLS.names():
            try:
                source = TOOLS.source(name) if name in TOOLS else name
                spec = build_tools([name], env)[0].spec
            except OmnilabError as e:
                infos.append(ToolInfo(name, source if name in TOOLS else name, None, str(e)))
                continue
            infos.append(ToolInfo(name, source, spec))
    return infos
