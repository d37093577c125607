"""The browser's way in to omnilab's local servers: ``GET /login`` is a small form, and posting
the token to it sets the token cookie (``HttpOnly``, ``SameSite=Strict``) and goes on to the
server's home page. So the address printed for a browser holds no token, and no command line
(a browser started with a URL) ever does: other users of the host read every process's argv.
The guard's Host and Origin checks apply to ``/login`` as to every path; only the token check
does not (it is what the form supplies).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

__all__ = ["LOGIN", "login"]

LOGIN = "/login"
_MAX_FORM = 4096

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_FORM = """<!doctype html>
<html><head><meta charset="utf-8"><title>omnilab: sign in</title>
<meta name="referrer" content="no-referrer"></head>
<body style="font-family: sans-serif; max-width: 32em; margin: 4em auto">
<h1>omnilab</h1>
<p>{message}</p>
<form method="POST" action="/login">
<label>Token <input name="token" type="password" autocomplete="current-password" autofocus
 size="48"></label>
<button type="submit">Sign in</button>
</form>
</body></html>
"""
_ASK = "Paste the token the server printed at start (or the one in its token file)."


async def login(
    method: str, receive: Receive, send: Send, *, token: str, cookie: str, home: str
) -> None:
    """Answer ``/login``: the form on GET; on POST, the cookie and a redirect to ``home`` when
    the posted token is right, the form again with 401 when not."""
    if method != "POST":
        await _page(send, 200, _ASK)
        return
    body = await _read(receive)
    if body is None:
        await _page(send, 413, "That form was too large.")
        return
    given = parse_qs(body.decode("latin-1")).get("token", [""])[0].strip()
    if not hmac.compare_digest(given.encode(), token.encode()):
        await _page(send, 401, "Wrong token. " + _ASK)
        return
    headers = [
        (b"location", home.encode()),
        (b"set-cookie", cookie.encode()),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def _read(receive: Receive) -> bytes | None:
    """The request body, or None past :data:`_MAX_FORM` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_FORM:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _page(send: Send, status: int, message: str) -> None:
    body = _FORM.format(message=message).encode()
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"x-frame-options", b"DENY"),
        (b"content-security-policy", b"default-src 'none'; form-action 'self'"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
