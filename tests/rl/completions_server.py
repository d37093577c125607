"""A local vLLM-style ``/v1/completions`` for the token-exact tests, on 127.0.0.1 only."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def completions_server(
    handler: Callable[[web.Request], Awaitable[web.Response]],
) -> AsyncIterator[str]:
    """Serves ``handler`` at ``/v1/completions`` on a free port; yields the base URL
    (``http://127.0.0.1:PORT/v1``) and stops the server on exit."""
    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()
