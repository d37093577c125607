"""Web, image and video results from search APIs: Serper, Brave, SearXNG and Tavily.

Each class adds the image and video endpoints of its API to the text provider of
:mod:`omnilab.tools.web.providers` (same key variable, base URL setting, timeout and key
scrubbing, from :class:`~omnilab.tools.web._http.RemoteProvider`). Keys are read from the
environment when a search runs and travel only in request headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnilab.tools.mediasearch.types import MediaHit, SearchKind
from omnilab.tools.web._http import RemoteProvider, strip_tags
from omnilab.tools.web.errors import WebError, WebErrorCode

__all__ = ["BraveMedia", "SearxngMedia", "SerperMedia", "TavilyMedia"]


def _text(value: object) -> str:
    return strip_tags(str(value or ""))


def _get(record: Mapping[str, Any], *path: str) -> str | None:
    """``record[a][b]...`` as text, ``None`` when a step is missing or empty."""
    value: Any = record
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return str(value) if value not in (None, "") else None


class _Media(RemoteProvider):
    kinds: frozenset[SearchKind] = frozenset({"web", "image", "video"})

    def _check(self, kind: SearchKind) -> None:
        if kind not in self.kinds:
            served = ", ".join(sorted(self.kinds))
            raise WebError(
                WebErrorCode.INVALID_ARGS,
                f"{self.name} serves {served} search only, not {kind}; choose another provider",
            )

    def _hit(self, kind: SearchKind, **fields: Any) -> MediaHit:
        # A thumbnail from an API is fetched, never read from disk: only http(s) URLs are kept.
        thumb = fields.get("thumbnail")
        if thumb is not None and not str(thumb).startswith(("http://", "https://")):
            fields["thumbnail"] = None
        return MediaHit(kind=kind, provider=self.name, **fields)


class SerperMedia(_Media):
    """Google results through serper.dev: ``/search``, ``/images``, ``/videos`` (``SERPER_API_KEY``)."""

    name = "serper"
    key_env = "SERPER_API_KEY"
    url_setting = "serper_url"
    _PATHS: Mapping[SearchKind, tuple[str, str]] = {
        "web": ("/search", "organic"),
        "image": ("/images", "images"),
        "video": ("/videos", "videos"),
    }

    async def search(self, query: str, *, kind: SearchKind, top_k: int) -> list[MediaHit]:
        """The ``top_k`` best Google results of ``kind`` for ``query``."""
        self._check(kind)
        key = self.api_key()
        path, field = self._PATHS[kind]
        data = await self.request_json(
            "POST",
            path,
            headers={"X-API-KEY": key},
            json_body={"q": query, "num": top_k},
            secret=key,
        )
        records: list[dict[str, Any]] = (data or {}).get(field) or []
        hits: list[MediaHit] = []
        for r in records:
            if kind == "image":
                url = _get(r, "imageUrl")
                thumb = _get(r, "thumbnailUrl") or url
                fields = {"source_page": _get(r, "link"), "snippet": _text(r.get("source"))}
            else:
                url = _get(r, "link")
                thumb = _get(r, "imageUrl") if kind == "video" else None
                fields = {"snippet": _text(r.get("snippet")), "date": _get(r, "date")}
                if kind == "video":
                    fields["duration"] = _get(r, "duration")
            if url:
                hits.append(
                    self._hit(kind, title=_text(r.get("title")), url=url, thumbnail=thumb, **fields)
                )
        return hits[:top_k]


class BraveMedia(_Media):
    """Brave Search API: ``web``, ``images`` and ``videos`` endpoints (``BRAVE_API_KEY``)."""

    name = "brave"
    key_env = "BRAVE_API_KEY"
    url_setting = "brave_url"
    _MAX: Mapping[SearchKind, int] = {"web": 20, "image": 100, "video": 50}

    async def search(self, query: str, *, kind: SearchKind, top_k: int) -> list[MediaHit]:
        """The ``top_k`` best Brave results of ``kind`` for ``query``."""
        self._check(kind)
        key = self.api_key()
        endpoint = {"web": "web", "image": "images", "video": "videos"}[kind]
        data = await self.request_json(
            "GET",
            f"/res/v1/{endpoint}/search",
            headers={"X-Subscription-Token": key, "Accept": "application/json"},
            params={"q": query, "count": min(top_k, self._MAX[kind])},
            secret=key,
        )
        data = data or {}
        records: list[dict[str, Any]] = (
            (data.get("web") or {}).get("results") if kind == "web" else data.get("results")
        ) or []
        hits: list[MediaHit] = []
        for r in records:
            thumb = _get(r, "thumbnail", "src")
            if kind == "image":
                url = _get(r, "properties", "url") or _get(r, "url")
                fields = {"source_page": _get(r, "url"), "snippet": _text(r.get("source"))}
            else:
                url = _get(r, "url")
                fields = {"snippet": _text(r.get("description")), "date": _get(r, "age")}
                if kind == "video":
                    fields["duration"] = _get(r, "video", "duration")
                else:
                    thumb = None
            if url:
                hits.append(
                    self._hit(kind, title=_text(r.get("title")), url=url, thumbnail=thumb, **fields)
                )
        return hits[:top_k]


class SearxngMedia(_Media):
    """A SearXNG instance: one ``/search`` endpoint, the kind chosen by ``categories``."""

    name = "searxng"
    url_setting = "searxng_url"
    _CATEGORY: Mapping[SearchKind, str] = {"web": "general", "image": "images", "video": "videos"}

    async def search(self, query: str, *, kind: SearchKind, top_k: int) -> list[MediaHit]:
        """The ``top_k`` best results of the kind's category for ``query``."""
        self._check(kind)
        if not self.base_url:
            raise WebError(
                WebErrorCode.MISSING_CONFIG,
                "searxng search needs the instance's base URL: set OMNILAB_WEB__SEARXNG_URL",
            )
        data = await self.request_json(
            "GET",
            "/search",
            params={"q": query, "format": "json", "categories": self._CATEGORY[kind]},
        )
        records: list[dict[str, Any]] = (data or {}).get("results") or []
        hits: list[MediaHit] = []
        for r in records:
            page = _get(r, "url")
            if kind == "image":
                url = _get(r, "img_src") or page
                thumb = _get(r, "thumbnail_src") or url
                fields = {"source_page": page}
            else:
                url = page
                thumb = _get(r, "thumbnail") if kind == "video" else None
                fields = {"date": _get(r, "publishedDate")}
                if kind == "video":
                    fields["duration"] = _get(r, "length")
            if url:
                hits.append(
                    self._hit(
                        kind,
                        title=_text(r.get("title")),
                        url=url,
                        snippet=_text(r.get("content")),
                        thumbnail=thumb,
                        **fields,
                    )
                )
        return hits[:top_k]


class TavilyMedia(_Media):
    """Tavily: web results, and the images it attaches to them (``TAVILY_API_KEY``); no video."""

    name = "tavily"
    key_env = "TAVILY_API_KEY"
    url_setting = "tavily_url"
    kinds: frozenset[SearchKind] = frozenset({"web", "image"})

    async def search(self, query: str, *, kind: SearchKind, top_k: int) -> list[MediaHit]:
        """The ``top_k`` best web results, or the images found with them, for ``query``."""
        self._check(kind)
        key = self.api_key()
        body: dict[str, Any] = {
            "query": query,
            "max_results": min(top_k, 20),
            "search_depth": "basic",
            "include_answer": False,
        }
        if kind == "image":
            body |= {"include_images": True, "include_image_descriptions": True}
        data = await self.request_json(
            "POST",
            "/search",
            headers={"Authorization": f"Bearer {key}"},
            json_body=body,
            secret=key,
        )
        data = data or {}
        if kind == "web":
            return [
                self._hit(
                    "web",
                    title=_text(r.get("title")),
                    url=str(r["url"]),
                    snippet=_text(r.get("content")),
                    date=_get(r, "published_date"),
                )
                for r in (data.get("results") or [])
                if r.get("url")
            ][:top_k]
        hits: list[MediaHit] = []
        for image in data.get("images") or []:
            # Plain URLs, or {url, description} objects when descriptions are asked for.
            url = image if isinstance(image, str) else _get(image, "url")
            about = "" if isinstance(image, str) else _text(image.get("description"))
            if url:
                hits.append(
                    self._hit(
                        "image", title=about[:80] or url, url=url, snippet=about, thumbnail=url
                    )
                )
        return hits[:top_k]
