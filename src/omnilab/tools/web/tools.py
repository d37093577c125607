"""The model-facing tools ``web_search`` and ``page_browser``, with the exact OmniGAIA schemas.

Construction options (provider, result count, limits) go to the factories; the model sees only
the paper's arguments: ``web_search(query)`` and ``page_browser(urls)``. Failures come back as
error results with a stable code (``MISSING_KEY``, ``TIMEOUT``, ``TOO_LARGE``, ``NOT_FOUND``,
``HTTP_ERROR``, ...), never as exceptions into the agent loop.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from omnilab.config import get_settings
from omnilab.content import Text
from omnilab.tools.base import Tool, ToolResult, tool
from omnilab.tools.web.browser import Browser
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.schemas import omnigaia_tool_schema
from omnilab.tools.web.search import WebSearch, render_hits
from omnilab.tools.web.types import SearchProvider

__all__ = ["page_browser_tool", "web_search_tool", "web_tools"]

# The schema allows 1 to 10 URLs per call (maxItems in the OmniGAIA schema).
_MAX_URLS = 10


def web_search_tool(
    provider: str | SearchProvider | None = None,
    *,
    top_k: int | None = None,
    cache: bool | None = None,
    cache_ttl_s: float | None = None,
    **provider_options: Any,
) -> Tool:
    """The ``web_search`` tool over ``provider`` (a name such as ``local`` or ``serper``, or a
    :class:`SearchProvider`); ``provider_options`` (``base_url``, ``api_key``, ``index_dir``)
    go to a named provider. No key is needed until a search runs.
    """
    searcher = WebSearch(
        provider, top_k=top_k, cache=cache, cache_ttl_s=cache_ttl_s, **provider_options
    )
    schema = omnigaia_tool_schema("web_search", fresh=False)

    @tool(name=schema["name"], description=schema["description"], parameters=schema["parameters"])
    async def web_search(query: str) -> ToolResult:
        """Search the web and list the best results.

        Args:
            query: The search query string.
        """
        hits, cached = await searcher.search(query)
        return ToolResult(
            content=[Text(text=render_hits(query, hits))],
            metadata={
                "provider": searcher.provider_name,
                "cached": cached,
                "hits": [h.model_dump(mode="json") for h in hits],
            },
        )

    return web_search


def _as_url_list(urls: list[str] | str) -> list[str]:
    # Models often send one URL, or the list as a JSON string, instead of a JSON array.
    if isinstance(urls, str):
        text = urls.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list) and all(isinstance(u, str) for u in parsed):
                return _as_url_list(parsed)
        urls = [text]
    return list(dict.fromkeys(u.strip() for u in urls if u.strip()))


def page_browser_tool(
    *,
    index_dir: Path | str | None = None,
    page_chars: int | None = None,
    timeout_s: float | None = None,
    max_bytes: int | None = None,
    max_redirects: int | None = None,
    allow_private: bool | None = None,
    include_links: bool | None = None,
    cache: bool | None = None,
    cache_ttl_s: float | None = None,
) -> Tool:
    """The ``page_browser`` tool: web pages as Markdown main text, ``corpus://<id>`` documents
    from the local index at ``index_dir``; long pages are cut into pages of ``page_chars``
    and a later page is read by calling again with ``<url>#page=N``. Options default to the
    ``web`` settings.
    """
    browser = Browser(
        index_dir=index_dir,
        page_chars=page_chars,
        timeout_s=timeout_s,
        max_bytes=max_bytes,
        max_redirects=max_redirects,
        allow_private=allow_private,
        include_links=include_links,
        cache=cache,
        cache_ttl_s=cache_ttl_s,
    )
    schema = omnigaia_tool_schema("page_browser", fresh=False)

    async def read(url: str) -> str | WebError:
        try:
            return await browser.render(url)
        except WebError as e:
            return e

    @tool(name=schema["name"], description=schema["description"], parameters=schema["parameters"])
    async def page_browser(urls: list[str] | str) -> ToolResult:
        """Read web pages or local corpus documents.

        Args:
            urls: http(s) URLs or corpus://<doc_id> ids, each optionally ending in #page=N.
        """
        targets = _as_url_list(urls)
        if not 1 <= len(targets) <= _MAX_URLS:
            raise WebError(
                WebErrorCode.INVALID_ARGS,
                f"give 1 to {_MAX_URLS} URLs (got {len(targets)})",
            )
        results = await asyncio.gather(*(read(u) for u in targets))
        errors = {u: r for u, r in zip(targets, results, strict=True) if isinstance(r, WebError)}
        if len(errors) == len(targets):
            first = next(iter(errors.values()))
            if len(errors) == 1:
                raise first
            message = " | ".join(e.message for e in errors.values())
            return ToolResult.fail(
                first.code.value, message, errors={u: e.code.value for u, e in errors.items()}
            )
        sections = [
            f"Error [{r.code.value}]: {r.message}" if isinstance(r, WebError) else r
            for r in results
        ]
        return ToolResult(
            content=[Text(text="\n\n---\n\n".join(sections))],
            metadata={"urls": targets, "errors": {u: e.code.value for u, e in errors.items()}},
        )

    return page_browser


def web_tools(
    provider: str | SearchProvider | None = None,
    *,
    index_dir: Path | str | None = None,
    top_k: int | None = None,
) -> list[Tool]:
    """``[web_search, page_browser]`` sharing one local index (``index_dir``, else the setting,
    else the sample corpus), so ``corpus://`` ids found by search open in the browser."""
    name = provider if isinstance(provider, str) or provider is None else None
    options: dict[str, Any] = {}
    if (name or get_settings().web.search_provider) == "local" and index_dir is not None:
        options["index_dir"] = index_dir
    return [
        web_search_tool(provider, top_k=top_k, **options),
        page_browser_tool(index_dir=index_dir),
    ]
