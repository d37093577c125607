"""Search providers by name, imported only when asked for.

``local`` searches an offline BM25 index; ``serper``, ``tavily``, ``brave`` and ``searxng`` call
web search APIs. :func:`register_provider` adds a name (a dotted ``module:Class`` path, or any
callable returning a :class:`~omnilab.tools.web.types.SearchProvider`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.types import SearchProvider

__all__ = ["get_provider", "provider_names", "register_provider"]

ProviderFactory = Callable[..., SearchProvider]

_REGISTRY: dict[str, str | ProviderFactory] = {
    "local": "omnilab.tools.web.providers.local:LocalSearch",
    "serper": "omnilab.tools.web.providers.serper:SerperSearch",
    "tavily": "omnilab.tools.web.providers.tavily:TavilySearch",
    "brave": "omnilab.tools.web.providers.brave:BraveSearch",
    "searxng": "omnilab.tools.web.providers.searxng:SearxngSearch",
}


def provider_names() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(_REGISTRY)


def register_provider(name: str, factory: str | ProviderFactory) -> None:
    """Make ``name`` resolve to ``factory`` (``"package.module:Class"`` or a callable)."""
    _REGISTRY[name] = factory


def get_provider(name: str, **options: Any) -> SearchProvider:
    """A new provider ``name`` built with ``options`` (``base_url``, ``api_key``, ...).

    Raises ``WebError(UNKNOWN_PROVIDER)`` for a name that is not registered.
    """
    target = _REGISTRY.get(name)
    if target is None:
        raise WebError(
            WebErrorCode.UNKNOWN_PROVIDER,
            f"unknown search provider {name!r}; choose one of {', '.join(provider_names())}",
        )
    if isinstance(target, str):
        module_name, _, attr = target.partition(":")
        factory: ProviderFactory = getattr(importlib.import_module(module_name), attr)
    else:
        factory = target
    return factory(**options)
