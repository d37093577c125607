"""The checks every request to ``omnilab serve`` passes before any route sees it.

In this order, each refusal one line of JSON (``{"detail": ...}``):

1. **Host** (403): the ``Host`` header names this server (a loopback name, the address it was
   bound to, or a name given with ``--allow-host``). A web page whose own domain resolves to
   127.0.0.1 (DNS rebinding) sends its domain here, and is refused.
2. **Origin** (403): a browser's ``Origin`` header must be this server's own origin, and a
   ``Sec-Fetch-Site`` other than ``same-origin``/``none`` is refused, so a page on another origin
   (another port of localhost included) can neither post a form nor ``fetch`` from here.
3. **Size** (413): a body whose ``Content-Length`` is over the uploads' limit (plus 1 MiB for
   the other fields) is refused before a byte of it is read; a POST without a length, 411.
4. **Token** (401): every path but ``/v1/health`` needs ``Authorization: Bearer TOKEN``,
   compared in constant time, or the cookie a browser gets by opening a page once with
   ``?token=TOKEN`` (HttpOnly, SameSite=Strict, so other sites' requests do not carry it) or by
   posting the token to the login form at ``/login`` (:mod:`omnilab.server.login`), the way the
   address printed at start leads, so that no address or command line holds the token.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from omnilab._hosts import LOOPBACK, host_name
from omnilab.server.login import LOGIN, login

__all__ = ["COOKIE", "Guard"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "omnilab_token"
_OPEN = frozenset({"/v1/health"})
_SITES = frozenset({"same-origin", "none"})
_BODIES = frozenset({"POST", "PUT", "PATCH"})
_REFERRER = (b"referrer-policy", b"no-referrer")
_FORM_SLACK = 1 << 20  # the question and other form fields besides the uploads


class Guard:
    """ASGI middleware: Host, Origin, body size and token checks around ``app``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        hosts: Iterable[str],
        max_upload: int,
        host_hint: str = " (add a name with --allow-host)",
        command: str = "omnilab serve",
        home: str = "/",
    ) -> None:
        self.app = app
        self.home = home
        """Where the login form goes on to once the token is right."""
        self.host_hint = host_hint
        self.command = command
        """Who printed the token: the 401 names it."""
        self.token = token
        self.hosts = frozenset(host_name(h) for h in hosts) | LOOPBACK
        self.max_upload = max_upload
        self.max_body = max_upload + _FORM_SLACK

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # the API has no websockets: close any at once
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        problem = self._check(scope, headers)
        if problem is not None:
            status, detail, extra = problem
            await _refuse(send, status, detail, extra)
            return
        send = _no_referrer(send)
        if scope["path"] == LOGIN and self.token is not None:
            cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            await login(
                scope.get("method", "GET"),
                receive,
                send,
                token=self.token,
                cookie=cookie,
                home=self.home,
            )
            return
        query = _query_token(scope)
        # Only a token that matched is echoed: a wrong one on an open path must not get it.
        if (
            self.token is not None
            and query is not None
            and scope.get("method") == "GET"
            and hmac.compare_digest(query.encode(), self.token.encode())
        ):
            send = self._setting_cookie(send)
        await self.app(scope, receive, send)

    def _setting_cookie(self, send: Send) -> Send:
        """``send`` adding the token cookie to the response (a page opened with ``?token=``
        then loads its stylesheet and media, and later pages, without it)."""
        assert self.token is not None
        cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie)]
            await send(message)

        return sending

    def _check(
        self, scope: Scope, headers: dict[str, str]
    ) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        host = headers.get("host", "")
        if host_name(host) not in self.hosts:
            return (
                403,
                f"unknown Host {host!r}: this server answers only to "
                f"{', '.join(sorted(self.hosts))}{self.host_hint}",
                [],
            )
        origin = headers.get("origin")
        own = f"{scope.get('scheme', 'http')}://{host}".lower()
        if origin is not None and origin.strip().lower() != own:
            return 403, f"cross-origin request refused: Origin {origin!r} is not {own}", []
        site = headers.get("sec-fetch-site")
        if site is not None and site not in _SITES:
            return 403, f"cross-origin request refused: Sec-Fetch-Site {site}", []
        length = headers.get("content-length")
        if length is None and scope.get("method") in _BODIES:
            # A body without a length would be spooled to disk before the uploads' limit is seen.
            return 411, "send the request body with a Content-Length (curl -F and browsers do)", []
        length = length or "0"
        if not length.isdigit() or int(length) > self.max_body:
            return (
                413,
                f"request body of {length} bytes is larger than the {self.max_upload >> 20} MiB "
                "of uploads this server takes (--max-upload-mb)",
                [],
            )
        if self.token is None or scope["path"] in _OPEN or scope["path"] == LOGIN:
            return None
        if self._authorised(scope, headers):
            return None
        return (
            401,
            "missing or wrong bearer token: send Authorization: Bearer TOKEN "
            f"(printed by {self.command} at start)",
            [(b"www-authenticate", b"Bearer")],
        )

    def _authorised(self, scope: Scope, headers: dict[str, str]) -> bool:
        assert self.token is not None
        want = self.token.encode()
        given = headers.get("authorization", "")
        # The scheme's name is case-insensitive (RFC 9110 11.1): "bearer TOKEN" is the same.
        if given[:7].lower() == "bearer " and hmac.compare_digest(given[7:].encode(), want):
            return True
        query = _query_token(scope)
        if query is not None and scope.get("method") == "GET":
            return hmac.compare_digest(query.encode(), want)
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is just no cookie
            return False
        sent = cookie.get(COOKIE)
        return sent is not None and hmac.compare_digest(sent.value.encode(), want)


def _no_referrer(send: Send) -> Send:
    """``send`` adding ``Referrer-Policy: no-referrer``: a page opened with ``?token=`` never
    hands its address (the token) to a link or resource it points at."""

    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), _REFERRER]
        await send(message)

    return sending


def _query_token(scope: Scope) -> str | None:
    """The ``token`` query parameter of a request, if any."""
    found = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return found[0] if found else None


async def _refuse(
    send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
