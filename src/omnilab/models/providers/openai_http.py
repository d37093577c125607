"""The HTTP side of the OpenAI-compatible adapter: one POST per request, on aiohttp.

Why not the OpenAI SDK: the adapter only ever sent prebuilt bodies through the SDK's raw
``post`` route, yet importing the SDK took about 1 s of every ``omnilab`` start, and its
request building plus the httpx connection pool (which walks every open connection, with a
socket poll each, to place each request) cost several milliseconds of CPU per call at 64 calls
in flight: ``bench/harness.py --only e2e`` ran 1,000 one-call tasks at 15x the ideal wall
time. aiohttp (what vLLM's own serving benchmark uses) keeps a plain keep-alive pool per event
loop; errors keep the kinds and wording they had.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp

from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.providers.wire_body import MediaChangedError, StreamedBody

__all__ = ["ChatHTTP", "HTTPStatusError", "retry_after"]


@dataclass
class HTTPStatusError(Exception):
    """A reply with a status of 400 or more: its status, decoded body (or text) and headers."""

    status: int
    body: object
    text: str
    headers: Mapping[str, str]

    def detail(self) -> str:
        """The server's own message when the body has one (``{"error": {"message": ...}}``)."""
        body = self.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            if isinstance(inner, dict) and isinstance(inner.get("message"), str):
                return str(inner["message"])
            if isinstance(inner, str):
                return inner
        return self.text.strip()[:300] or f"HTTP {self.status}"


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            pass
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, when.timestamp() - time.time())
    return None


# Bytes handed to the connection at a time when a streamed body is sent.
_SEND_BYTES = 1 << 20


def _take(chunks: Iterator[bytes], failed: list[MediaChangedError]) -> bytes:
    """The next ``_SEND_BYTES`` or so of ``chunks`` (empty at the end)."""
    got: list[bytes] = []
    n = 0
    try:
        for chunk in chunks:
            got.append(chunk)
            n += len(chunk)
            if n >= _SEND_BYTES:
                break
    except MediaChangedError as e:
        failed.append(e)
        raise
    return b"".join(got)


async def _stream(body: StreamedBody, failed: list[MediaChangedError]) -> AsyncIterator[bytes]:
    # Reading and base64-encoding happen in a worker thread: the event loop only writes.
    chunks = body.chunks()
    while piece := await asyncio.to_thread(_take, chunks, failed):
        yield piece


async def _closer(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    # A started async generator is finalised by its event loop when the loop shuts down
    # (``asyncio.run`` calls ``loop.shutdown_asyncgens()``): this closes the pool then, inside
    # the loop, instead of leaving an "Unclosed client session" warning at exit.
    try:
        yield
    finally:
        await session.close()


@dataclass(frozen=True)
class _Pool:
    """One event loop's connection pool, its closer, and the proxy its requests go through."""

    session: aiohttp.ClientSession
    closer: AsyncIterator[None]
    proxy: str | None
    proxy_auth: aiohttp.BasicAuth | None


def _env_proxy(url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """The proxy the environment names for ``url`` (``None`` when none applies or NO_PROXY
    exempts its host), as aiohttp's ``trust_env`` would pick it."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None
    return str(proxy), auth


class ChatHTTP:
    """POSTs JSON bodies to ``{base_url}/chat/completions`` with a bearer key."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        # A pool belongs to the event loop it was made on; each loop (each asyncio.run of the
        # sync API) gets its own, closed when that loop shuts down.
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = (
            weakref.WeakKeyDictionary()
        )

    async def _session(self) -> _Pool:
        loop = asyncio.get_running_loop()
        held = self._sessions.get(loop)
        if held is not None and not held.session.closed:
            return held
        # No connection cap here: the Model's per-endpoint limit decides how many calls run.
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        # The proxy from the environment (HTTP_PROXY, NO_PROXY, ...) is looked up once per pool,
        # for the one URL this client posts to: with trust_env, aiohttp looked it up (and read
        # ~/.netrc twice) in a worker thread for every request. netrc credentials never
        # applied: the Authorization header is always set, and aiohttp refuses both. Looked up
        # here, on the loop (once, and small): an await between the check above and storing
        # the pool would let concurrent first calls each make a pool.
        proxy, proxy_auth = _env_proxy(self.url)
        session = aiohttp.ClientSession(connector=connector)
        closer = _closer(session)
        await anext(closer)
        pool = _Pool(session, closer, proxy, proxy_auth)
        self._sessions[loop] = pool
        return pool

    async def post(
        self, body: dict[str, Any] | StreamedBody | bytes, *, timeout_s: float
    ) -> object:
        """The decoded JSON reply (its text when it is not JSON); ``bytes`` are a body already
        encoded as JSON, sent as they are.

        A :class:`StreamedBody` is sent as it is read: its files are read and base64-encoded a
        chunk at a time in a worker thread, with its exact length announced up front.

        Raises :class:`HTTPStatusError` for a status of 400 or more, and
        :class:`~omnilab.models.errors.ProviderError` (``timeout``, ``connection``, ``media``)
        when no reply came.
        """
        pool = await self._session()
        send_headers = self._headers
        failed: list[MediaChangedError] = []
        data: bytes | AsyncIterator[bytes]
        if isinstance(body, StreamedBody):
            # With the length given, aiohttp sends the body as is (no chunked encoding), so
            # the server reads the same bytes as from a prebuilt body.
            send_headers = {**send_headers, "Content-Length": str(body.size)}
            data = _stream(body, failed)
        elif isinstance(body, bytes):
            data = body
        else:
            data = json.dumps(body, ensure_ascii=False).encode()
        try:
            async with pool.session.post(
                self.url,
                data=data,
                headers=send_headers,
                timeout=aiohttp.ClientTimeout(total=timeout_s),
                proxy=pool.proxy,
                proxy_auth=pool.proxy_auth,
            ) as response:
                raw = await response.read()
                status, headers = response.status, response.headers
        except TimeoutError:
            raise ProviderError(ErrorKind.TIMEOUT, f"no answer within {timeout_s:g} s") from None
        except (aiohttp.ClientError, OSError) as e:
            if failed:
                raise ProviderError(ErrorKind.MEDIA, f"cannot send media: {failed[0]}") from None
            raise ProviderError(
                ErrorKind.CONNECTION,
                f"cannot connect to {self.url.rsplit('/chat/', 1)[0]} ({type(e).__name__})",
            ) from None
        text = raw.decode("utf-8", errors="replace")
        try:
            decoded: object = json.loads(text)
        except ValueError:
            decoded = text
        if status >= 400:
            raise HTTPStatusError(status, decoded, text, headers)
        return decoded
