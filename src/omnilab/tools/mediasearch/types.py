"""The types of multi-kind search: a result of kind ``web``, ``image`` or ``video``, and the
provider protocol every backend (remote API or local index) implements."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

__all__ = ["KINDS", "MediaHit", "MediaSearchProvider", "SearchKind"]

SearchKind = Literal["web", "image", "video"]
KINDS: tuple[SearchKind, ...] = ("web", "image", "video")


class MediaHit(BaseModel):
    """One result of any kind, whatever the provider."""

    model_config = ConfigDict(frozen=True)

    kind: SearchKind
    title: str
    url: str
    """The page, image or video (``http(s)://...``, or ``image://``/``video://``/``corpus://``
    ids of a local index)."""
    snippet: str = ""
    """The description: a web snippet, an image's caption/alt text, a video's description or
    the transcript around the match."""
    thumbnail: str | None = None
    """An image of the result (an image's thumbnail, a video's poster frame): an http(s) URL
    or a local file path. Vision models are sent it as an image."""
    source_page: str | None = None
    """The page an image or video was found on, where the provider gives one."""
    start_s: float | None = None
    """For a video in a local index: where the matching passage starts, in seconds."""
    end_s: float | None = None
    duration: str | None = None
    """A video's length as the provider writes it (``3:42``)."""
    date: str | None = None
    provider: str
    score: float | None = None


@runtime_checkable
class MediaSearchProvider(Protocol):
    """Answers a query with ranked results of one kind.

    ``kinds`` says which kinds it serves; asking for another is a ``WebError(INVALID_ARGS)``.
    Failures a model can act on are :class:`~omnilab.tools.web.errors.WebError` with a stable
    code (``MISSING_KEY``, ``HTTP_ERROR``, ``TIMEOUT``, ...); no message carries an API key.
    """

    name: str
    kinds: frozenset[SearchKind]

    async def search(self, query: str, *, kind: SearchKind, top_k: int) -> list[MediaHit]:
        """The best ``top_k`` results of ``kind`` for ``query``, best first."""
        ...
