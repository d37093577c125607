"""Google results through the Serper API (``SERPER_API_KEY``), as the OmniGAIA tools use."""

from __future__ import annotations

from typing import Any

from omnilab.tools.web._http import RemoteProvider
from omnilab.tools.web.types import SearchHit

__all__ = ["SerperSearch"]


class SerperSearch(RemoteProvider):
    """``POST /search`` with ``X-API-KEY``; maps the ``organic`` results."""

    name = "serper"
    key_env = "SERPER_API_KEY"
    url_setting = "serper_url"

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        """The ``top_k`` best organic Google results for ``query``."""
        key = self.api_key()
        data = await self.request_json(
            "POST",
            "/search",
            headers={"X-API-KEY": key},
            json_body={"q": query, "num": top_k},
            secret=key,
        )
        organic: list[dict[str, Any]] = (data or {}).get("organic") or []
        return self.hits(organic, top_k, url="link", snippet="snippet", dates=("date",))
