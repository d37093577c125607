"""The small types of web search and browsing: a search hit, the provider protocol, a page."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

__all__ = ["Page", "SearchHit", "SearchProvider"]


class SearchHit(BaseModel):
    """One search result, whatever the provider."""

    model_config = ConfigDict(frozen=True)

    title: str
    url_or_id: str
    """An http(s) URL, or ``corpus://<doc_id>`` for a document of a local index."""
    snippet: str
    score: float | None = None
    """The provider's relevance score where it gives one (BM25 for ``local``)."""
    provider: str
    """Name of the provider that returned the hit."""
    date: str | None = None
    """Publication date as the provider wrote it, where it gives one."""


@runtime_checkable
class SearchProvider(Protocol):
    """Anything that answers a query with ranked hits.

    Implementations raise :class:`~omnilab.tools.web.errors.WebError` for every failure a model
    can act on (missing key, HTTP status, timeout); they never put an API key in a message.
    """

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        """The best ``top_k`` hits for ``query``, best first (fewer when there are fewer)."""
        ...


class Page(BaseModel):
    """A readable page: the main text of a web page or a local corpus document, as Markdown."""

    model_config = ConfigDict(frozen=True)

    url: str
    """What was asked for (``https://...`` or ``corpus://<doc_id>``), without a ``#page=N``."""
    final_url: str
    """Where the text came from after redirects (the same as ``url`` for corpus documents)."""
    title: str
    markdown: str
