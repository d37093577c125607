"""One search front for every provider and kind: result count, cache, thumbnails, rendering.

``MediaSearch("serper").search("eiffel tower", "image")`` returns hits; :func:`render_results`
turns them into what a model reads: numbered text (title, URL, description, time range) and,
when ``images`` is on, each result's thumbnail or poster frame as an image part right after its
text, so a vision model sees which picture belongs to which result.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from omnilab.config import get_settings
from omnilab.content import Content, Image, Text
from omnilab.tools.mediasearch.providers import get_media_provider
from omnilab.tools.mediasearch.thumbs import fetch_thumbnail
from omnilab.tools.mediasearch.types import MediaHit, MediaSearchProvider, SearchKind
from omnilab.tools.web.cache import WebCache
from omnilab.tools.web.errors import WebError, WebErrorCode

__all__ = ["MediaSearch", "render_results"]


class MediaSearch:
    """A provider with a result count and a cache (remote providers only, keyed by the
    provider's ``cache_id``, the kind, the query and ``top_k``)."""

    def __init__(
        self,
        provider: str | MediaSearchProvider | None = None,
        *,
        top_k: int | None = None,
        cache: bool | None = None,
        **provider_options: Any,
    ) -> None:
        web = get_settings().web
        if provider is None or isinstance(provider, str):
            provider = get_media_provider(provider or "local", **provider_options)
        elif provider_options:
            raise TypeError("provider_options apply only to a provider given by name")
        self.provider = provider
        self.top_k = top_k if top_k is not None else min(web.top_k, 5)
        if self.top_k < 1:
            raise WebError(WebErrorCode.INVALID_ARGS, f"top_k must be at least 1 (got {top_k})")
        self.cache = WebCache("media-search", enabled=cache)

    @property
    def name(self) -> str:
        """The provider's name."""
        return str(getattr(self.provider, "name", type(self.provider).__name__))

    async def search(self, query: str, kind: SearchKind) -> tuple[list[MediaHit], bool]:
        """``(hits, from_cache)``; ``INVALID_ARGS`` for an empty query or a kind the provider
        does not serve."""
        query = " ".join(query.split())
        if not query:
            raise WebError(WebErrorCode.INVALID_ARGS, "the query is empty; give keywords")
        if kind not in self.provider.kinds:
            served = ", ".join(sorted(self.provider.kinds))
            raise WebError(
                WebErrorCode.INVALID_ARGS,
                f"the {self.name} provider serves {served} search, not {kind}",
            )
        cache_id = getattr(self.provider, "cache_id", None)
        key = [cache_id, kind, query, self.top_k]
        if cache_id is not None:
            cached = self.cache.get(key)
            if isinstance(cached, list):
                return [MediaHit.model_validate(h) for h in cached], True
        hits = (await self.provider.search(query, kind=kind, top_k=self.top_k))[: self.top_k]
        if cache_id is not None:
            self.cache.put(key, [h.model_dump(mode="json") for h in hits])
        return hits, False


def _span(hit: MediaHit) -> str | None:
    if hit.start_s is None:
        return None
    end = f"{hit.end_s:.1f}" if hit.end_s is not None else "?"
    return f"{hit.start_s:.1f}-{end} s"


async def _picture(hit: MediaHit) -> Path | None:
    if not hit.thumbnail:
        return None
    if hit.thumbnail.startswith(("http://", "https://")):
        return await fetch_thumbnail(hit.thumbnail)
    if hit.provider != "local":  # only a local index names files (its own thumbnails)
        return None
    path = Path(hit.thumbnail)
    return path if path.is_file() else None


async def render_results(query: str, hits: list[MediaHit], *, images: bool) -> list[Content]:
    """What the model reads for ``hits``: one text block per result and, with ``images``, the
    result's picture after it (results whose picture cannot be had keep their text)."""
    if not hits:
        return [Text(text=f"No results for {query!r}. Try other or fewer keywords.")]
    pictures = await asyncio.gather(*(_picture(h) for h in hits)) if images else [None] * len(hits)
    parts: list[Content] = []
    for number, (hit, picture) in enumerate(zip(hits, pictures, strict=True), start=1):
        lines = [f"{number}. [{hit.kind}] {hit.title or '(untitled)'}", f"   URL: {hit.url}"]
        if hit.source_page and hit.source_page != hit.url:
            lines.append(f"   Page: {hit.source_page}")
        extra = [x for x in (_span(hit), hit.duration, hit.date) if x]
        if extra:
            lines.append(f"   {' | '.join(extra)}")
        if hit.snippet:
            lines.append(f"   {' '.join(hit.snippet.split())}")
        if picture is not None:
            lines.append(f"   (picture {number} follows)")
        parts.append(Text(text="\n".join(lines)))
        if picture is not None:
            parts.append(Image(path=picture, mime_type="image/jpeg"))
    return parts
