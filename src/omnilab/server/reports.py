"""``omnilab report --serve RUNS_DIR``: the reports of a folder of runs, on 127.0.0.1, behind
the same guard as ``omnilab serve`` (:class:`~omnilab.server.guard.Guard`: a loopback ``Host``
only, no cross-site ``Origin``, and the bearer token or the cookie the ``/login`` page sets).

Files are served from the private report folder only, opened beneath it without following a
link (:mod:`omnilab._wsread`); a file under ``media/`` is sent with ``Content-Security-Policy:
sandbox`` (a copied input opened on its own, an HTML or SVG file, runs no script), every file
with ``nosniff`` (the guard adds ``no-referrer``).
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import unquote

from omnilab import _wsread
from omnilab.report.serve import ReportServer
from omnilab.server.guard import Guard, Receive, Scope, Send

__all__ = ["report_app"]

_MAX_FILE = 1024**3


def report_app(reports: ReportServer, *, token: str | None) -> Guard:
    """The ASGI app serving ``reports`` (``GET``/``HEAD`` only) behind its guard."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method = scope.get("method", "GET")
        if method not in ("GET", "HEAD"):
            await _reply(send, 405, b"GET only\n", "text/plain", head=False)
            return
        path = unquote(scope["path"]).lstrip("/")
        if path == "" or path.endswith("/"):
            path += "index.html"
        first = path.split("/", 1)[0]
        if any(part.startswith(".") for part in path.split("/")):  # the snapshots: not served
            await _reply(send, 404, b"not found\n", "text/plain", head=method == "HEAD")
            return
        try:
            if path == "index.html":
                await asyncio.to_thread(reports.write_root)
            elif path.endswith(".html") and first in await asyncio.to_thread(reports.run_names):
                await asyncio.to_thread(reports.refresh, first)
            data = await asyncio.to_thread(
                _wsread.read_bytes, path, root=reports.out, max_bytes=_MAX_FILE
            )
        except OSError:
            await _reply(send, 404, b"not found\n", "text/plain", head=method == "HEAD")
            return
        kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
        sandboxed = "/media/" in f"/{path}"
        await _reply(send, 200, data, kind, head=method == "HEAD", sandboxed=sandboxed)

    return Guard(app, token=token, hosts=(), max_upload=0, host_hint="", home="/")


async def _reply(
    send: Send, status: int, body: bytes, kind: str, *, head: bool, sandboxed: bool = False
) -> None:
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", kind.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"cache-control", b"no-store"),
    ]
    if sandboxed:
        headers.append((b"content-security-policy", b"sandbox"))
    start: MutableMapping[str, Any] = {
        "type": "http.response.start",
        "status": status,
        "headers": headers,
    }
    await send(start)
    await send({"type": "http.response.body", "body": b"" if head else body})
