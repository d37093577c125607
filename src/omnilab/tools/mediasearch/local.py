"""Offline search of all three kinds: web pages from the local text index (``omnilab index
build``), images and videos from local media indexes (``omnilab index build --kind image|video``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from omnilab.config import get_settings
from omnilab.tools.mediasearch.index import open_media_index
from omnilab.tools.mediasearch.types import MediaHit, SearchKind
from omnilab.tools.web.errors import WebError, WebErrorCode

__all__ = ["LocalMedia"]


class LocalMedia:
    """Searches local indexes. ``index_dir`` may hold ``text/``, ``image/`` and ``video/``
    indexes (what :mod:`omnilab.tools.mediasearch.sample` builds); ``text_index``,
    ``image_index`` and ``video_index`` name each one instead. Given none of these, all three
    kinds search the offline sample's indexes (:func:`~omnilab.tools.mediasearch.sample.
    sample_folder`, built on the first search). Given some, a kind without an index answers
    ``NO_INDEX``, except web search, which falls back to ``web.index_dir``, else the sample
    corpus shipped with omnilab. ``keyframes`` above 1 shows each video result as a sheet of
    that many frames of its passage instead of one poster frame.
    """

    name = "local"
    kinds: frozenset[SearchKind] = frozenset({"web", "image", "video"})
    cache_id = None  # a local index answers in milliseconds; a cache would go stale on rebuild

    def __init__(
        self,
        *,
        index_dir: Path | str | None = None,
        text_index: Path | str | None = None,
        image_index: Path | str | None = None,
        video_index: Path | str | None = None,
        keyframes: int = 1,
    ) -> None:
        root = Path(index_dir) if index_dir is not None else None

        def pick(given: Path | str | None, sub: str) -> Path | None:
            if given is not None:
                return Path(given)
            if root is not None and (root / sub).is_dir():
                return root / sub
            return None

        self.text_index = pick(text_index, "text")
        self.image_index = pick(image_index, "image")
        self.video_index = pick(video_index, "video")
        self.use_sample = all(x is None for x in (index_dir, text_index, image_index, video_index))
        self.keyframes = keyframes

    def __repr__(self) -> str:
        return (
            f"LocalMedia(text={self.text_index}, image={self.image_index}, "
            f"video={self.video_index})"
        )

    async def search(self, query: str, *, kind: SearchKind, top_k: int) -> list[MediaHit]:
        """The best ``top_k`` local results of ``kind`` for ``query``."""
        return await asyncio.to_thread(self._search, query, kind, top_k)

    def _search(self, query: str, kind: SearchKind, top_k: int) -> list[MediaHit]:
        if self.use_sample:
            from omnilab.tools.mediasearch.sample import sample_folder

            root = sample_folder() / "index"
            self.text_index, self.image_index = root / "text", root / "image"
            self.video_index, self.use_sample = root / "video", False
        if kind == "web":
            return self._web(query, top_k)
        path = self.image_index if kind == "image" else self.video_index
        if path is None:
            raise WebError(
                WebErrorCode.NO_INDEX,
                f"no local {kind} index is configured: build one with "
                f"omnilab index build --kind {kind} DIR --out OUT and pass it to the agent",
            )
        return open_media_index(path, kind).search(query, top_k=top_k, keyframes=self.keyframes)

    def _web(self, query: str, top_k: int) -> list[MediaHit]:
        from omnilab.tools.web.index import open_index

        path = self.text_index or get_settings().web.index_dir
        if path is None:
            from omnilab.tools.web.sample import sample_index

            path = sample_index()
        hits = open_index(Path(path)).search(query, top_k=top_k)
        return [
            MediaHit(
                kind="web",
                title=h.title,
                url=h.url_or_id,
                snippet=h.snippet,
                provider="local",
                score=h.score,
            )
            for h in hits
        ]
