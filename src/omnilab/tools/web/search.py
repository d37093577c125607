"""Searching with any provider, with the on-disk cache, and rendering hits for a model."""

from __future__ import annotations

from typing import Any

from omnilab.config import get_settings
from omnilab.tools.web.cache import WebCache
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.providers import get_provider
from omnilab.tools.web.types import SearchHit, SearchProvider

__all__ = ["WebSearch", "render_hits"]


class WebSearch:
    """A provider with a result count and a cache: ``await WebSearch("serper").search(q)``.

    ``provider`` is a registered name (default: setting ``web.search_provider``) built with
    ``provider_options``, or any object with the :class:`SearchProvider` method. Results are
    cached by the provider's ``cache_id`` (its name and endpoint), the query and ``top_k``; a
    provider without a ``cache_id`` (such as ``local``) is not cached.
    """

    def __init__(
        self,
        provider: str | SearchProvider | None = None,
        *,
        top_k: int | None = None,
        cache: bool | None = None,
        cache_ttl_s: float | None = None,
        **provider_options: Any,
    ) -> None:
        web = get_settings().web
        if provider is None or isinstance(provider, str):
            provider = get_provider(provider or web.search_provider, **provider_options)
        elif provider_options:
            raise TypeError("provider_options apply only to a provider given by name")
        self.provider = provider
        self.top_k = top_k if top_k is not None else web.top_k
        if self.top_k < 1:
            raise WebError(WebErrorCode.INVALID_ARGS, f"top_k must be at least 1 (got {top_k})")
        self.cache = WebCache("search", enabled=cache, ttl_s=cache_ttl_s)

    @property
    def provider_name(self) -> str:
        """The provider's ``name``, else its class name."""
        return str(getattr(self.provider, "name", type(self.provider).__name__))

    async def search(self, query: str) -> tuple[list[SearchHit], bool]:
        """``(hits, from_cache)`` for ``query``; ``INVALID_ARGS`` for an empty query."""
        query = " ".join(query.split())
        if not query:
            raise WebError(WebErrorCode.INVALID_ARGS, "the query is empty; give keywords")
        cache_id = getattr(self.provider, "cache_id", None)
        key = [cache_id, query, self.top_k]
        if cache_id is not None:
            cached = self.cache.get(key)
            if isinstance(cached, list):
                return [SearchHit.model_validate(h) for h in cached], True
        hits = (await self.provider.search(query, top_k=self.top_k))[: self.top_k]
        if cache_id is not None:
            self.cache.put(key, [h.model_dump(mode="json") for h in hits])
        return hits, False


def render_hits(query: str, hits: list[SearchHit]) -> str:
    """Numbered, compact text: title, URL (or ``corpus://`` id), date, snippet."""
    if not hits:
        return f"No results for {query!r}. Try other or fewer keywords."
    lines: list[str] = []
    for number, hit in enumerate(hits, start=1):
        lines.append(f"{number}. {hit.title or '(untitled)'}")
        lines.append(f"   URL: {hit.url_or_id}")
        if hit.date:
            lines.append(f"   Date: {hit.date}")
        if hit.snippet:
            lines.append(f"   {' '.join(hit.snippet.split())}")
    return "\n".join(lines)
