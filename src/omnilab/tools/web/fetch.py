"""Fetching one web page safely: http(s) only, public addresses only (unless allowed), a total
deadline, a byte limit checked while streaming, HTML/text only, redirects counted and re-checked.
"""

from __future__ import annotations

import asyncio
import codecs
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from omnilab.tools.web.errors import WebError, WebErrorCode

if TYPE_CHECKING:
    import httpx2

__all__ = ["Fetched", "check_url", "fetch"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript"})
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w.:-]+)""", re.IGNORECASE)
_SNIFF_BYTES = 4096


@dataclass(frozen=True)
class Fetched:
    """A downloaded page: where it ended up, its type and its decoded text."""

    url: str
    is_html: bool
    text: str


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


async def check_url(url: str, *, allow_private: bool) -> None:
    """Refuse what page_browser must not open: other schemes, no host, non-public addresses.

    A host name is resolved and every address it has must be public. The connection resolves the
    name again, so a DNS server that answers differently the second time is not stopped here.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:  # a malformed host or port
        raise WebError(WebErrorCode.INVALID_URL, f"cannot open {url!r}: {e}") from None
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"{parts.scheme}://" if parts.scheme else "a URL without a scheme"
        raise WebError(
            WebErrorCode.INVALID_URL,
            f"cannot open {url!r}: page_browser opens http(s) URLs and corpus://<doc_id> "
            f"documents only, not {scheme}",
        )
    host = parts.hostname
    if not host:
        raise WebError(WebErrorCode.INVALID_URL, f"cannot open {url!r}: it names no host")
    if allow_private:
        return
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port or 443, type=socket.SOCK_STREAM
            )
        except (OSError, UnicodeError) as e:
            raise WebError(
                WebErrorCode.NETWORK_ERROR, f"cannot resolve the host of {url}: {e}"
            ) from None
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for address in addresses:
        if not _is_public(address):
            raise WebError(
                WebErrorCode.REFUSED,
                f"refused {url}: {host} is a local or private address ({address}); "
                "page_browser opens public web pages only",
            )


def _content_type(header: str) -> tuple[str, str | None]:
    mime, _, params = header.partition(";")
    match = re.search(r"charset=[\"']?([\w.:-]+)", params, re.IGNORECASE)
    return mime.strip().lower(), match.group(1) if match else None


def _kind(mime: str, head: bytes) -> str | None:
    """``html``, ``text`` or ``None`` (not readable), from the declared type and the first bytes."""
    if b"\0" in head:
        return None
    if mime in _HTML_TYPES:
        return "html"
    if mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return "text"
    if not mime:  # undeclared: sniff
        return "html" if head.lstrip()[:1] == b"<" else "text"
    return None


def _decode(body: bytes, charset: str | None, is_html: bool) -> str:
    if charset is None and is_html:
        match = _META_CHARSET.search(body[:_SNIFF_BYTES])
        charset = match.group(1).decode("ascii", "replace") if match else None
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return body.decode(codec, errors="replace")


async def fetch(
    url: str,
    *,
    timeout_s: float,
    max_bytes: int,
    max_redirects: int,
    allow_private: bool,
    user_agent: str,
) -> Fetched:
    """GET ``url`` within ``timeout_s`` seconds in all; :class:`WebError` for every failure."""
    import httpx2  # imported here: nothing heavy at import time

    headers = {
        "User-Agent": user_agent,
        "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
    }
    current = url
    try:
        async with (
            asyncio.timeout(timeout_s),
            httpx2.AsyncClient(timeout=timeout_s, headers=headers) as client,
        ):
            for _ in range(max_redirects + 1):
                await check_url(current, allow_private=allow_private)
                async with client.stream("GET", current) as response:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        current = urljoin(current, location)
                        continue
                    return await _read(current, response, max_bytes)
    except (TimeoutError, httpx2.TimeoutException):
        raise WebError(
            WebErrorCode.TIMEOUT,
            f"{url} did not load within {timeout_s:g} s; try again later or another source",
        ) from None
    except httpx2.InvalidURL as e:
        raise WebError(WebErrorCode.INVALID_URL, f"cannot open {url!r}: {e}") from None
    except httpx2.HTTPError as e:
        raise WebError(WebErrorCode.NETWORK_ERROR, f"cannot load {url}: {e}") from None
    raise WebError(
        WebErrorCode.TOO_MANY_REDIRECTS,
        f"{url} redirected more than {max_redirects} times (a redirect loop?); try another source",
    )


def _size(n: int) -> str:
    return f"{n / 1e3:.0f} kB" if n < 1_000_000 else f"{n / 1e6:.1f} MB"


def _unsupported(url: str, mime: str) -> WebError:
    return WebError(
        WebErrorCode.UNSUPPORTED_TYPE,
        f"{url} is {mime or 'binary data'}, not a web page; page_browser reads HTML and text",
    )


async def _read(url: str, response: httpx2.Response, max_bytes: int) -> Fetched:
    if response.status_code >= 400:
        raise WebError(
            WebErrorCode.HTTP_ERROR,
            f"{url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip(),
        )
    mime, charset = _content_type(response.headers.get("content-type", ""))
    if mime and _kind(mime, b"") is None:  # refused before a byte of the body is read
        raise _unsupported(url, mime)
    declared = response.headers.get("content-length", "")
    limit = f"the {_size(max_bytes)} page limit"
    if declared.isdigit() and int(declared) > max_bytes:
        raise WebError(WebErrorCode.TOO_LARGE, f"{url} is {_size(int(declared))}, over {limit}")
    body = bytearray()
    sniffed = False
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:  # stop reading: the rest is never downloaded
            raise WebError(WebErrorCode.TOO_LARGE, f"{url} is larger than {limit}")
        if not sniffed and len(body) >= _SNIFF_BYTES:
            sniffed = True
            if _kind(mime, bytes(body[:_SNIFF_BYTES])) is None:
                break  # binary behind a text type: no need to download the rest
    head = bytes(body[:_SNIFF_BYTES])
    kind = _kind(mime, head)
    if kind is None:
        raise _unsupported(url, "" if b"\0" in head else mime)
    return Fetched(
        url=url, is_html=kind == "html", text=_decode(bytes(body), charset, kind == "html")
    )
