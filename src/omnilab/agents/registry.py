"""Agents by name: ``get_agent("tir", mode="active")``.

Each name points at a factory (``module:callable`` taking the agent's options as keywords),
imported only when that agent is asked for, so registering an agent costs nothing and its
dependencies load only when it runs. A package adds one without editing omnilab through the
entry-point group ``omnilab.agents`` (see :mod:`omnilab.registry`). A factory that declares
``options_model`` (a pydantic model) gets its options listed by ``omnilab agents``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from omnilab._docstrings import field_doc
from omnilab.agents.base import Agent, AgentConfigError
from omnilab.registry import Registry

__all__ = [
    "AGENTS",
    "AgentFactory",
    "AgentInfo",
    "AgentOption",
    "agent_names",
    "describe_agent",
    "get_agent",
    "register_agent",
    "with_search_option",
]

AgentFactory = Callable[..., Agent]


def _factory(value: Any) -> AgentFactory:
    if not callable(value):
        raise TypeError(f"an agent factory must be callable, got {type(value).__name__}")
    return value  # type: ignore[no-any-return]


AGENTS: Registry[AgentFactory] = Registry(
    "agent",
    group="omnilab.agents",
    entries={
        "tir": "omnilab.agents.tir:TirAgent",
        "deepsearch": "omnilab.agents.deepsearch:DeepSearchAgent",
        "coder": "omnilab.agents.coder:CoderAgent",
        "ota": "omnilab.agents.ota:OtaAgent",
        "master": "omnilab.agents.master:MasterAgent",
    },
    error=AgentConfigError,
    coerce=_factory,
)
"""Every agent factory by name."""


def register_agent(name: str, factory: str | AgentFactory) -> None:
    """Add or replace agent ``name``: ``module:callable`` or a callable taking the options."""
    AGENTS.register(name, factory)


def agent_names() -> list[str]:
    """The agent names: built-in and registered ones first, then plugins'."""
    return AGENTS.names()


def get_agent(name: str, **options: Any) -> Agent:
    """The agent ``name`` built with ``options``.

    ``tir`` takes ``variant`` (``base`` or ``omniatlas``), ``mode`` (``native``, ``active``,
    ``tools``, ``evidence``), ``generate`` (a :class:`~omnilab.models.GenerateConfig`) and
    ``max_observation_chars``. Raises :class:`AgentConfigError` for an unknown name or option.
    """
    agent: Agent = AGENTS.get(name)(**options)
    return agent


@dataclass(frozen=True)
class AgentOption:
    """One option an agent takes."""

    name: str
    type: str
    default: str
    help: str = ""


@dataclass(frozen=True)
class AgentInfo:
    """What ``omnilab agents`` shows about one agent."""

    name: str
    summary: str
    source: str
    options: list[AgentOption]


def _type_name(annotation: Any) -> str:
    """``base|omniatlas`` for a Literal, ``int?`` for an optional int, else the type's name."""
    if annotation is inspect.Parameter.empty or annotation is None:
        return ""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is Literal:
        return "|".join(str(a) for a in args)
    if len(args) < len(typing.get_args(annotation)):  # X | None
        return f"{'|'.join(_type_name(a) for a in args)}?"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default(value: Any) -> str:
    if isinstance(value, BaseModel):
        return f"{type(value).__name__}({value.model_dump(exclude_defaults=True) or ''})"
    return repr(value)


def _model_options(model: type[BaseModel]) -> list[AgentOption]:
    out = []
    for name, field in model.model_fields.items():
        default = (
            "required"
            if field.is_required()
            else _default(field.get_default(call_default_factory=True))
        )
        about = field_doc(model, name, field.description)
        out.append(AgentOption(name, _type_name(field.annotation), default, about))
    return out


def _signature_options(factory: AgentFactory) -> list[AgentOption]:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [
        AgentOption(
            p.name,
            _type_name(p.annotation),
            "required" if p.default is inspect.Parameter.empty else repr(p.default),
        )
        for p in params
        if p.kind in kinds
    ]


def describe_agent(name: str) -> AgentInfo:
    """The summary and options of agent ``name`` (imports it); :class:`AgentConfigError` if
    it is unknown or cannot load."""
    factory = AGENTS.get(name)
    model = getattr(factory, "options_model", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        options = _model_options(model)
    else:
        options = _signature_options(factory)
    doc = inspect.getdoc(factory) or ""
    return AgentInfo(name, doc.split("\n\n")[0].replace("\n", " "), AGENTS.source(name), options)


def with_search_option(agent: str, options: Mapping[str, Any], search: str) -> Mapping[str, Any]:
    """``options`` with ``search`` for an agent that picks its own search provider with an
    option of that name (``deepsearch``), unless ``options`` already set it; other agents'
    options unchanged (their ``web_search`` tools take the run's provider)."""
    if "search" in options or "search" not in {o.name for o in describe_agent(agent).options}:
        return options
    return {**options, "search": search}
