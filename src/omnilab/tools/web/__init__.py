"""Web search and page browsing for agents, online or fully offline.

- :func:`web_search_tool` / :func:`page_browser_tool` / :func:`web_tools`: the model-facing tools
  with the exact OmniGAIA schemas.
- Providers by name (:func:`get_provider`): ``local`` (BM25 over a corpus), ``serper``,
  ``tavily``, ``brave``, ``searxng``; anything with an async ``search(query, *, top_k)`` works.
- :func:`build_index` / :func:`open_index`: the offline index (``omnilab index build``);
  :func:`sample_index`: the index of the corpus shipped with omnilab, for the offline demo.

Importing this package loads no HTTP, HTML or BM25 library; they load on first use.
"""

from __future__ import annotations

from omnilab.tools.web.browser import Browser
from omnilab.tools.web.corpus import Document, JsonlFields
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.index import IndexManifest, LocalIndex, build_index, open_index
from omnilab.tools.web.providers import get_provider, provider_names, register_provider
from omnilab.tools.web.sample import sample_corpus_dir, sample_index
from omnilab.tools.web.search import WebSearch, render_hits
from omnilab.tools.web.tools import page_browser_tool, web_search_tool, web_tools
from omnilab.tools.web.types import Page, SearchHit, SearchProvider

__all__ = [
    "Browser",
    "Document",
    "IndexManifest",
    "JsonlFields",
    "LocalIndex",
    "Page",
    "SearchHit",
    "SearchProvider",
    "WebError",
    "WebErrorCode",
    "WebSearch",
    "build_index",
    "get_provider",
    "open_index",
    "page_browser_tool",
    "provider_names",
    "register_provider",
    "render_hits",
    "sample_corpus_dir",
    "sample_index",
    "web_search_tool",
    "web_tools",
]
