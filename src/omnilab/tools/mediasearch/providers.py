"""Multi-kind search providers by name, imported only when asked for.

``local`` searches offline indexes; ``serper``, ``brave``, ``searxng`` (web, image, video) and
``tavily`` (web, image) call search APIs with keys from the environment. A package adds one with
:func:`register_media_provider` or an ``omnilab.media_providers`` entry point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omnilab.registry import Registry
from omnilab.tools.mediasearch.types import MediaSearchProvider
from omnilab.tools.web.errors import WebError, WebErrorCode

__all__ = [
    "MEDIA_PROVIDERS",
    "get_media_provider",
    "media_provider_names",
    "register_media_provider",
]

MediaProviderFactory = Callable[..., MediaSearchProvider]


def _unknown(message: str) -> WebError:
    return WebError(WebErrorCode.UNKNOWN_PROVIDER, message)


def _as_factory(value: object) -> MediaProviderFactory:
    if not callable(value):
        raise TypeError(f"a media search provider must be callable, got {type(value).__name__}")
    return value


MEDIA_PROVIDERS: Registry[MediaProviderFactory] = Registry(
    "media search provider",
    group="omnilab.media_providers",
    entries={
        "local": "omnilab.tools.mediasearch.local:LocalMedia",
        "serper": "omnilab.tools.mediasearch.remote:SerperMedia",
        "brave": "omnilab.tools.mediasearch.remote:BraveMedia",
        "searxng": "omnilab.tools.mediasearch.remote:SearxngMedia",
        "tavily": "omnilab.tools.mediasearch.remote:TavilyMedia",
    },
    error=_unknown,
    coerce=_as_factory,
)
"""Media search provider factories by name."""


def media_provider_names() -> list[str]:
    """The registered names, sorted."""
    return sorted(MEDIA_PROVIDERS.names())


def register_media_provider(name: str, factory: str | MediaProviderFactory) -> None:
    """Make ``name`` resolve to ``factory`` (``"package.module:Class"`` or a callable)."""
    MEDIA_PROVIDERS.register(name, factory)


def get_media_provider(name: str, **options: Any) -> MediaSearchProvider:
    """A new provider ``name`` built with ``options``; ``UNKNOWN_PROVIDER`` if not registered."""
    return MEDIA_PROVIDERS.get(name)(**options)
