"""Offline search over a local BM25 index built with ``omnilab index build``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from omnilab.config import get_settings
from omnilab.tools.web.index import LocalIndex, open_index
from omnilab.tools.web.types import SearchHit

__all__ = ["LocalSearch"]


class LocalSearch:
    """Searches the index at ``index_dir``; default: ``web.index_dir``, else the sample corpus.

    Results are not cached on disk: the index answers in milliseconds and a cache would only
    serve stale hits after a rebuild.
    """

    name = "local"
    cache_id = None

    def __init__(self, *, index_dir: Path | str | None = None) -> None:
        configured = index_dir if index_dir is not None else get_settings().web.index_dir
        self.index_dir = Path(configured) if configured is not None else None

    def __repr__(self) -> str:
        return f"LocalSearch(index_dir={str(self.index_dir) if self.index_dir else None!r})"

    def index(self) -> LocalIndex:
        """The opened index (the sample corpus's, built on first use, when none is set)."""
        if self.index_dir is None:
            from omnilab.tools.web.sample import sample_index

            self.index_dir = sample_index()
        return open_index(self.index_dir)

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        """The ``top_k`` best documents of the local corpus for ``query``."""
        return await asyncio.to_thread(lambda: self.index().search(query, top_k=top_k))
