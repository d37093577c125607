"""URLs of inputs (``https://``, ``s3://``, ``gs://``, ``az://``) as text: which strings are
URLs omnilab fetches, their public form (what may be recorded), and paths beneath a media root
that is a URL. Pure string work: nothing here imports a store's client or the media package.

A dataset names its media; it must never make the harness fetch from an arbitrary host (a
dataset is untrusted, and a URL it chooses could point at a cloud metadata service or an
internal endpoint). So a relative path joins the root URL only when it stays beneath it (no
``..`` segment, no absolute path, no query or fragment), and a full URL in a dataset must lie
beneath the root URL (same scheme, host, port and path prefix) unless the user allows outside
paths explicitly. The root's own query and user info are never carried to the paths beneath it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit, urlunsplit

from omnilab.errors import OmnilabError

__all__ = [
    "REMOTE_SCHEMES",
    "OutsideMediaRootError",
    "beneath",
    "is_remote",
    "join_beneath",
    "parent_url",
    "public_url",
    "store_of",
    "url_name",
]

# Schemes and the package that reads each (named in the one-line error when it is missing).
REMOTE_SCHEMES: Mapping[str, str] = {
    "http": "aiohttp",
    "https": "aiohttp",
    "s3": "botocore",  # botocore's own client, not s3fs (omnilab.media._remote_s3 says why)
    "s3a": "botocore",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
}


# The object store each bucket scheme reads (settings of a bucket hold for its aliases).
_STORES: Mapping[str, str] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gs",
    "gcs": "gs",
    "az": "az",
    "abfs": "az",
    "abfss": "az",
    "http": "http",
    "https": "https",  # a key for https:// never goes to http://
}


def store_of(scheme: str) -> str | None:
    """The store (``s3``, ``gs``, ``az``, ``http``, ``https``) a URL scheme reads, or ``None``."""
    return _STORES.get(scheme.lower())


def is_remote(text: object) -> bool:
    """Whether ``text`` is a URL omnilab fetches (a local path, or a ``Path``, never is)."""
    if not isinstance(text, str):
        return False
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in REMOTE_SCHEMES


def public_url(url: str) -> str:
    """``url`` without query, fragment and user info: what may be recorded and shown."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class OutsideMediaRootError(OmnilabError):
    """A dataset path that would leave its media root (or a URL outside it)."""

    code = "OUTSIDE_MEDIA_ROOT"


def _segments(path: str) -> list[str]:
    return [s for s in unquote(path).replace("\\", "/").split("/") if s not in ("", ".")]


def _escapes(path: str) -> bool:
    return ".." in unquote(path).replace("\\", "/").split("/")


def _root(root: str) -> tuple[str, str, str]:
    parts = urlsplit(public_url(root))
    folder = "/".join(_segments(parts.path))
    return parts.scheme.lower(), parts.netloc.lower(), folder


def join_beneath(root: str, given: str) -> str:
    """The URL of ``given`` (a relative path from a dataset) beneath the root URL ``root``.

    Raises :class:`OutsideMediaRootError` for ``..`` segments, an absolute path (``/x``, ``~/x``,
    ``C:\\x``), or a query or fragment (which would change what is fetched, not where).
    """
    text = given.strip()
    if not text:
        raise OutsideMediaRootError("an empty media path")
    if (
        text.startswith(("/", "\\", "~"))
        or (len(text) > 1 and text[1] == ":")
        or _escapes(text)
        or "?" in text
        or "#" in text
    ):
        raise OutsideMediaRootError(
            f"media path {given!r} would leave the media root {public_url(root)}"
        )
    scheme, netloc, folder = _root(root)
    rest = "/".join(_segments(text))
    joined = f"{folder}/{rest}" if folder else rest
    return f"{scheme}://{netloc}/{joined}"


def beneath(root: str, url: str) -> bool:
    """Whether the full URL ``url`` lies beneath the root URL ``root`` (scheme, host, port and
    path prefix; ``..`` anywhere in its path never does)."""
    parts = urlsplit(url)
    if _escapes(parts.path):
        return False
    scheme, netloc, folder = _root(root)
    host = parts.hostname or ""
    netloc_url = f"{host}:{parts.port}" if parts.port else host
    if parts.scheme.lower() != scheme or netloc_url.lower() != netloc:
        return False
    path = "/".join(_segments(parts.path))
    return not folder or path.startswith(folder + "/")


def parent_url(url: str) -> str:
    """The folder of ``url`` (public form): the default media root of a dataset at a URL."""
    parts = urlsplit(public_url(url))
    folder = str(PurePosixPath(parts.path or "/").parent)
    return f"{parts.scheme}://{parts.netloc}{folder.rstrip('/')}/"


def url_name(url: str) -> str:
    """The file name at the end of ``url``'s path (what a task shows for a remote input)."""
    return PurePosixPath(unquote(urlsplit(url).path)).name or "object"
