"""``omnilab mcp``: omnilab's media, search and code tools for any MCP client."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
            help="Serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio.",
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
) -> None:
    """Serve omnilab's tools over the Model Context Protocol (stdio by default).

    Files are named by their path inside FOLDER, which list_files gives; read_video returns
    frames as images, read_audio the segment as audio, code_executor runs in the sandbox.
    Example client config: {"command": "omnilab", "args": ["mcp", "/data/clips"]}.
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
    names = [n.strip() for n in tools.split(",") if n.strip()] if tools else list(DEFAULT_TOOLS)
    with serving(folder, names) as server:
        if http is not None:
            import uvicorn

            app = server.streamable_http_app(host="127.0.0.1")
            typer.echo(f"omnilab MCP server on http://127.0.0.1:{http}/mcp", err=True)
            uvicorn.run(app, host="127.0.0.1", port=http, log_level="warning")
            return

        async def stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(stdio)
