"""Search of web pages, images and videos, online (Serper, Brave, SearXNG, Tavily) or offline
(local text, image and video indexes), behind one provider interface.

- :class:`MediaSearch` and :func:`render_results`: search a provider and render the results for
  a model, thumbnails as images;
- :func:`get_media_provider`: providers by name (``local``, ``serper``, ``brave``, ``searxng``,
  ``tavily``);
- :func:`build_media_index` / :func:`open_media_index`: the local image and video indexes
  (``omnilab index build --kind image|video DIR``).

Importing this package loads no HTTP, image or BM25 library.
"""

from __future__ import annotations

from omnilab.tools.mediasearch.index import (
    MediaIndex,
    MediaIndexManifest,
    MediaKind,
    build_media_index,
    open_media_index,
)
from omnilab.tools.mediasearch.providers import (
    get_media_provider,
    media_provider_names,
    register_media_provider,
)
from omnilab.tools.mediasearch.search import MediaSearch, render_results
from omnilab.tools.mediasearch.types import KINDS, MediaHit, MediaSearchProvider, SearchKind

__all__ = [
    "KINDS",
    "MediaHit",
    "MediaIndex",
    "MediaIndexManifest",
    "MediaKind",
    "MediaSearch",
    "MediaSearchProvider",
    "SearchKind",
    "build_media_index",
    "get_media_provider",
    "media_provider_names",
    "open_media_index",
    "register_media_provider",
    "render_results",
]
