"""Reading pages for the model: web pages as Markdown main text, local corpus documents by id,
cut into pages of a set number of characters.

The exact OmniGAIA ``page_browser`` schema takes only ``urls``, so a later page is asked for in
the URL itself: ``<url>#page=2``. A fragment is never sent to a server, so this names the same
page; the note under each page says how to ask for the next one.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from omnilab.config import get_settings
from omnilab.tools.web.cache import WebCache
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.extract import html_to_markdown
from omnilab.tools.web.fetch import fetch
from omnilab.tools.web.index import CORPUS_SCHEME
from omnilab.tools.web.providers.local import LocalSearch
from omnilab.tools.web.types import Page

__all__ = ["Browser", "paginate", "split_page_fragment"]

_PAGE_FRAGMENT = re.compile(r"#page=(\d+)\s*$")


def split_page_fragment(url: str) -> tuple[str, int]:
    """``("https://x/y", 2)`` for ``"https://x/y#page=2"``; page 1 when there is no fragment."""
    url = url.strip()
    match = _PAGE_FRAGMENT.search(url)
    if match is None:
        return url, 1
    return url[: match.start()], int(match.group(1))


def paginate(text: str, page_chars: int) -> list[str]:
    """``text`` cut into pages of at most ``page_chars``, at paragraph ends where possible."""
    pages: list[str] = []
    start = 0
    while start < len(text):
        end = start + page_chars
        if end < len(text):
            floor = start + page_chars // 2
            for sep in ("\n\n", "\n", " "):
                cut = text.rfind(sep, floor, end)
                if cut > start:
                    end = cut
                    break
        page = text[start:end].strip()
        if page:
            pages.append(page)
        start = end
    return pages or [""]


class Browser:
    """Opens ``http(s)`` URLs and ``corpus://<doc_id>`` documents; options default to settings."""

    def __init__(
        self,
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
    ) -> None:
        web = get_settings().web
        self.corpus = LocalSearch(index_dir=index_dir)
        self.page_chars = page_chars or web.page_chars
        self.timeout_s = timeout_s or web.timeout_s
        self.max_bytes = max_bytes or web.max_page_bytes
        self.max_redirects = web.max_redirects if max_redirects is None else max_redirects
        self.allow_private = web.allow_private_urls if allow_private is None else allow_private
        self.include_links = web.include_links if include_links is None else include_links
        self.user_agent = web.user_agent
        self.cache = WebCache("pages", enabled=cache, ttl_s=cache_ttl_s)

    async def open(self, url: str) -> Page:
        """The whole readable text of ``url`` (no ``#page=N``); pages are cached on disk."""
        if url.startswith(CORPUS_SCHEME):
            doc_id = url[len(CORPUS_SCHEME) :]
            doc = await asyncio.to_thread(lambda: self.corpus.index().document(doc_id))
            return Page(url=url, final_url=doc.url or url, title=doc.title, markdown=doc.text)
        key = [url, self.include_links]
        cached = self.cache.get(key)
        if cached is not None:
            return Page.model_validate(cached)
        fetched = await fetch(
            url,
            timeout_s=self.timeout_s,
            max_bytes=self.max_bytes,
            max_redirects=self.max_redirects,
            allow_private=self.allow_private,
            user_agent=self.user_agent,
        )
        if fetched.is_html:
            title, markdown = await asyncio.to_thread(
                html_to_markdown, fetched.text, url=fetched.url, include_links=self.include_links
            )
        else:
            title, markdown = "", fetched.text.strip()
        if not markdown:
            raise WebError(
                WebErrorCode.NO_TEXT,
                f"{url} has no readable text (it may need JavaScript); try another source",
            )
        page = Page(url=url, final_url=fetched.url, title=title, markdown=markdown)
        self.cache.put(key, page.model_dump(mode="json"))
        return page

    async def read(self, target: str) -> tuple[Page, int, int, str]:
        """``(page, number, count, text)`` for ``target``, a URL optionally ending ``#page=N``."""
        url, number = split_page_fragment(target)
        if not url:
            raise WebError(WebErrorCode.INVALID_URL, "empty URL; give an http(s) URL or corpus id")
        page = await self.open(url)
        pages = paginate(page.markdown, self.page_chars)
        if not 1 <= number <= len(pages):
            raise WebError(
                WebErrorCode.INVALID_ARGS,
                f"{url} has {len(pages)} page(s); page {number} does not exist",
            )
        return page, number, len(pages), pages[number - 1]

    async def render(self, target: str) -> str:
        """What the model reads for ``target``: a header, a paging note, and the page text."""
        page, number, count, text = await self.read(target)
        lines = [f"Title: {page.title or '(untitled)'}", f"URL: {page.url}"]
        if page.final_url != page.url:
            lines.append(f"Source: {page.final_url}")
        if count > 1:
            more = (
                f'; for the next page call page_browser with "{page.url}#page={number + 1}"'
                if number < count
                else " (last page)"
            )
            lines.append(f"Page {number} of {count}{more}")
        return "\n".join(lines) + "\n\n" + text
