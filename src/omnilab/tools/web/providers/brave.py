"""Results of the Brave Search API (``BRAVE_API_KEY``)."""

from __future__ import annotations

from typing import Any

from omnilab.tools.web._http import RemoteProvider
from omnilab.tools.web.types import SearchHit

__all__ = ["BraveSearch"]

# The web search endpoint returns at most 20 results per request.
_MAX_COUNT = 20


class BraveSearch(RemoteProvider):
    """``GET /res/v1/web/search`` with ``X-Subscription-Token``; maps ``web.results``."""

    name = "brave"
    key_env = "BRAVE_API_KEY"
    url_setting = "brave_url"

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        """The ``top_k`` best web results for ``query``."""
        key = self.api_key()
        data = await self.request_json(
            "GET",
            "/res/v1/web/search",
            headers={"X-Subscription-Token": key, "Accept": "application/json"},
            params={"q": query, "count": min(top_k, _MAX_COUNT)},
            secret=key,
        )
        results: list[dict[str, Any]] = ((data or {}).get("web") or {}).get("results") or []
        return self.hits(
            results, top_k, snippet="description", dates=("age", "page_age"), html=True
        )
