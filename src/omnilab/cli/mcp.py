"""``omnilab mcp``: omnilab's media, search and code tools for any MCP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from omnilab.errors import OmnilabError

__all__ = ["mcp"]


class McpSetupError(OmnilabError):
    """The MCP server cannot start (missing extra, bad folder, unknown tool)."""


def mcp(
    folder: Annotated[
        Path, typer.Argument(help="The folder whose files the tools may read (nothing outside).")
    ],
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            min=1,
            max=65535,
            help="Serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (with a bearer "
            "token: a random one printed once, or --token-env).",
        ),
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            help="Tools to offer, comma-separated (default: read_video, read_audio, read_image, "
            "web_search, page_browser, code_executor; list_files is always there).",
        ),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            help="With --http: environment variable holding the bearer token (default: a "
            "random one, printed once).",
        ),
    ] = None,
    no_token: Annotated[
        bool,
        typer.Option(
            "--no-token", help="With --http: serve without a token (needs the flag below)."
        ),
    ] = False,
    understood: Annotated[
        bool,
        typer.Option(
            "--i-understand-anyone-on-this-host-can-run-code", help="Confirms --no-token."
        ),
    ] = False,
) -> None:
    """Serve omnilab's tools over the Model Context Protocol (stdio by default).

    Files are named by their path inside FOLDER, which list_files gives; read_video returns
    frames as images, read_audio the segment as audio, code_executor runs in the sandbox.
    Example client config: {"command": "omnilab", "args": ["mcp", "/data/clips"]}. Over
    --http every request needs "Authorization: Bearer TOKEN" and a loopback Host, and requests
    from web pages (an Origin header) are refused.
    """
    try:
        import anyio
        from mcp.server.stdio import stdio_server

        from omnilab.server.mcp import DEFAULT_TOOLS, serving
    except ImportError as e:
        raise McpSetupError(
            f"the MCP server needs the mcp extra ({e.name} is missing): pip install 'omnilab[mcp]'"
        ) from None
    if not folder.is_dir():
        raise McpSetupError(f"{folder} is not a folder")
    if http is None and (token_env is not None or no_token):
        raise McpSetupError("--token-env and --no-token apply to --http only (stdio needs none)")
    names = [n.strip() for n in tools.split(",") if n.strip()] if tools else list(DEFAULT_TOOLS)
    with serving(folder, names) as server:
        if http is not None:
            _serve_http(
                server.streamable_http_app(host="127.0.0.1"), http, token_env, no_token, understood
            )
            return

        async def stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(stdio)


# JSON-RPC messages only (tool arguments, code to run): a body over this is refused unread.
_MAX_BODY = 8 * 1024 * 1024


def _serve_http(
    app: Any, port: int, token_env: str | None, no_token: bool, understood: bool
) -> None:
    """Serve ``app`` on 127.0.0.1:``port`` behind omnilab serve's guard (Host, Origin, body
    size, bearer token)."""
    import uvicorn

    from omnilab.server.guard import Guard
    from omnilab.server.token import announce, bearer_token, removed_at_exit

    token, generated = bearer_token(
        token_env, no_token, understood, what="read the folder's files and run code with its tools"
    )
    url = f"http://127.0.0.1:{port}/mcp"
    typer.echo(f"omnilab MCP server on {url}", err=True)
    kept = announce(
        token,
        generated,
        what="read the folder's files and run code with these tools",
        name=f"mcp-{port}",
        usage=lambda header: [
            "client config: "
            + json.dumps({"url": url, "headers": {"Authorization": f"Bearer {token}"}}),
            f"check it: curl -H {header} -H 'Accept: application/json, text/event-stream' "
            f"-H 'Content-Type: application/json' -d '{{}}' {url}",
        ],
    )
    # Bound to 127.0.0.1 only: no other name can reach it, so no --allow-host to suggest.
    guarded = Guard(
        app, token=token, hosts=(), max_upload=_MAX_BODY, host_hint="", command="omnilab mcp --http"
    )
    with removed_at_exit(kept):
        uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")
