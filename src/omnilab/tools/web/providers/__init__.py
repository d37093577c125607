"""Search providers by name, imported only when asked for.

``local`` searches an offline BM25 index; ``serper``, ``tavily``, ``brave`` and ``searxng`` call
web search APIs. :func:`register_provider` adds a name (a dotted ``module:Class`` path, or any
callable returning a :class:`~omnilab.tools.web.types.SearchProvider`); a package adds one with
an ``omnilab.web_providers`` entry point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omnilab.registry import Registry
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.types import SearchProvider

__all__ = ["PROVIDERS", "get_provider", "provider_names", "register_provider"]

ProviderFactory = Callable[..., SearchProvider]


def _unknown(message: str) -> WebError:
    return WebError(WebErrorCode.UNKNOWN_PROVIDER, message)


def _as_factory(value: object) -> ProviderFactory:
    if not callable(value):
        raise TypeError(f"a search provider factory must be callable, got {type(value).__name__}")
    return value


PROVIDERS: Registry[ProviderFactory] = Registry(
    "search provider",
    group="omnilab.web_providers",
    entries={
        "local": "omnilab.tools.web.providers.local:LocalSearch",
        "serper": "omnilab.tools.web.providers.serper:SerperSearch",
        "tavily": "omnilab.tools.web.providers.tavily:TavilySearch",
        "brave": "omnilab.tools.web.providers.brave:BraveSearch",
        "searxng": "omnilab.tools.web.providers.searxng:SearxngSearch",
    },
    error=_unknown,
    coerce=_as_factory,
)
"""Search provider factories by name (entry-point group ``omnilab.web_providers``)."""


def provider_names() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(PROVIDERS.names())


def register_provider(name: str, factory: str | ProviderFactory) -> None:
    """Make ``name`` resolve to ``factory`` (``"package.module:Class"`` or a callable)."""
    PROVIDERS.register(name, factory)


def get_provider(name: str, **options: Any) -> SearchProvider:
    """A new provider ``name`` built with ``options`` (``base_url``, ``api_key``, ...).

    Raises ``WebError(UNKNOWN_PROVIDER)`` for a name that is not registered or cannot load.
    """
    return PROVIDERS.get(name)(**options)
