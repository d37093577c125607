"""Agents by name: ``get_agent("tir", mode="active")``.

Each name points at a factory by dotted path, imported only when that agent is asked for, so
registering an agent costs nothing and its dependencies load only when it runs.
"""

from __future__ import annotations

import importlib
from typing import Any

from omnilab.agents.base import Agent, AgentConfigError

__all__ = ["agent_names", "get_agent", "register_agent"]

_AGENTS: dict[str, str] = {
    "tir": "omnilab.agents.tir:TirAgent",
}


def register_agent(name: str, factory: str) -> None:
    """Add or replace agent ``name``; ``factory`` is ``module:callable`` taking the options."""
    if ":" not in factory:
        raise ValueError(f"factory must be 'module:callable' (got {factory!r})")
    _AGENTS[name] = factory


def agent_names() -> list[str]:
    """The registered agent names, sorted."""
    return sorted(_AGENTS)


def get_agent(name: str, **options: Any) -> Agent:
    """The agent ``name`` built with ``options``.

    ``tir`` takes ``variant`` (``base`` or ``omniatlas``), ``mode`` (``native``, ``active``,
    ``tools``, ``evidence``), ``generate`` (a :class:`~omnilab.models.GenerateConfig`) and
    ``max_observation_chars``. Raises :class:`AgentConfigError` for an unknown name or option.
    """
    path = _AGENTS.get(name)
    if path is None:
        raise AgentConfigError(f"unknown agent {name!r}; agents are: {', '.join(agent_names())}")
    module_name, _, attr = path.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    agent: Agent = factory(**options)
    return agent
