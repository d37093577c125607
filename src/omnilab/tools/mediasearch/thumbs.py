"""Fetching a result's thumbnail or poster image with the safeguards of page fetching.

Only http(s), only public addresses unless ``web.allow_private_urls`` (checked on every
redirect hop by :func:`omnilab.tools.web.fetch.check_url`), one deadline for the whole fetch,
a byte limit enforced while streaming, an ``image/*`` type, and a picture Pillow can decode.
The image is re-encoded as a small JPEG (nothing the server sent reaches the model as is) and
cached by URL under ``cache_dir/web/thumbs``. Failures return ``None``: a missing thumbnail
never fails a search.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
from pathlib import Path
from urllib.parse import urljoin

from omnilab.config import get_settings
from omnilab.tools.web.errors import WebError
from omnilab.tools.web.fetch import check_url

__all__ = ["THUMB_BYTES", "fetch_thumbnail"]

THUMB_BYTES = 2_000_000
"""The largest thumbnail read, in bytes (thumbnails are tens of kB)."""
_EDGE = 512
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def _cache_path(url: str) -> Path:
    digest = hashlib.sha256(url.encode()).hexdigest()
    return get_settings().cache_dir / "web" / "thumbs" / digest[:2] / f"{digest}.jpg"


def _reencode(body: bytes, out: Path) -> Path | None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(body)) as image:
            picture = image.convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError):
        return None
    picture.thumbnail((_EDGE, _EDGE))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    picture.save(tmp, format="JPEG", quality=85)
    tmp.replace(out)
    return out


async def _download(
    url: str, *, timeout_s: float, max_bytes: int, allow_private: bool
) -> bytes | None:
    import httpx2

    current = url
    async with asyncio.timeout(timeout_s), httpx2.AsyncClient(timeout=timeout_s) as client:
        for _ in range(get_settings().web.max_redirects + 1):
            await check_url(current, allow_private=allow_private)
            async with client.stream("GET", current) as response:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    current = urljoin(current, location)
                    continue
                mime = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code >= 400 or not mime.startswith("image/"):
                    return None
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    return None
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        return None
                return bytes(body)
    return None


async def fetch_thumbnail(
    url: str,
    *,
    timeout_s: float | None = None,
    max_bytes: int = THUMB_BYTES,
    allow_private: bool | None = None,
) -> Path | None:
    """A local JPEG of the image at ``url`` (cached), or ``None`` when it cannot be had safely."""
    web = get_settings().web
    out = _cache_path(url)
    if web.cache and out.is_file():
        return out
    import httpx2

    try:
        body = await _download(
            url,
            timeout_s=web.timeout_s if timeout_s is None else timeout_s,
            max_bytes=max_bytes,
            allow_private=web.allow_private_urls if allow_private is None else allow_private,
        )
    except (WebError, TimeoutError, httpx2.HTTPError, httpx2.InvalidURL, OSError):
        return None
    if body is None:
        return None
    return await asyncio.to_thread(_reencode, body, out)
