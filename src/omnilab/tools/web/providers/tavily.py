"""Results of the Tavily search API (``TAVILY_API_KEY``)."""

from __future__ import annotations

from typing import Any

from omnilab.tools.web._http import RemoteProvider
from omnilab.tools.web.types import SearchHit

__all__ = ["TavilySearch"]

# Tavily answers at most 20 results per request.
_MAX_RESULTS = 20


class TavilySearch(RemoteProvider):
    """``POST /search`` with a bearer key; maps ``results`` (``content`` is the snippet)."""

    name = "tavily"
    key_env = "TAVILY_API_KEY"
    url_setting = "tavily_url"

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        """The ``top_k`` best results for ``query`` (basic depth, no generated answer)."""
        key = self.api_key()
        data = await self.request_json(
            "POST",
            "/search",
            headers={"Authorization": f"Bearer {key}"},
            json_body={
                "query": query,
                "max_results": min(top_k, _MAX_RESULTS),
                "search_depth": "basic",
                "include_answer": False,
            },
            secret=key,
        )
        results: list[dict[str, Any]] = (data or {}).get("results") or []
        return self.hits(results, top_k, dates=("published_date",))
