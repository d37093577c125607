"""Results of a SearXNG metasearch instance (no key; its base URL is a setting)."""

from __future__ import annotations

from typing import Any

from omnilab.tools.web._http import RemoteProvider
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.types import SearchHit

__all__ = ["SearxngSearch"]


class SearxngSearch(RemoteProvider):
    """``GET /search?format=json``; the instance must list ``json`` in ``search.formats``."""

    name = "searxng"
    url_setting = "searxng_url"

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        """The ``top_k`` best results for ``query`` (SearXNG pages hold about 10 results)."""
        if not self.base_url:
            raise WebError(
                WebErrorCode.MISSING_CONFIG,
                "searxng search needs the instance's base URL: set OMNILAB_WEB__SEARXNG_URL "
                "(e.g. http://localhost:8080)",
            )
        try:
            data = await self.request_json("GET", "/search", params={"q": query, "format": "json"})
        except WebError as e:
            if e.code is WebErrorCode.HTTP_ERROR and "HTTP 403" in e.message:
                raise WebError(
                    e.code, f"{e.message}; enable the json format in the instance's settings.yml"
                ) from None
            raise
        results: list[dict[str, Any]] = (data or {}).get("results") or []
        return self.hits(results, top_k, dates=("publishedDate",))
