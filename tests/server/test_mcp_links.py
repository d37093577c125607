"""``omnilab mcp FOLDER``: a link inside FOLDER that leads out of it is neither listed nor served,
also when a file is swapped for one after listing (issue 33, reproduction 6)."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import mcp_types as types
from mcp import Client

from omnilab.media import synth
from omnilab.server.mcp import McpTools, build_server


def _images(result: types.CallToolResult) -> list[bytes]:
    return [base64.b64decode(b.data) for b in result.content if isinstance(b, types.ImageContent)]


def _text(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


def test_links_out_of_the_folder_are_neither_listed_nor_served(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    secret = synth.make_image(private / "secret.png", size=(40, 40), index=6)
    secret.chmod(0o600)
    root = tmp_path / "served"
    (root / "sub").mkdir(parents=True)
    synth.make_image(root / "photo.png", size=(64, 48), index=3)
    (root / "leak.png").symlink_to(secret)  # out of the folder
    (root / "sub" / "up.png").symlink_to("../../private/secret.png")  # out, by a relative link
    (root / "outside").symlink_to(private)  # a folder out of it
    (root / "inner.png").symlink_to("photo.png")  # stays inside: listed, served as photo.png
    os.mkfifo(root / "pipe.png")  # never opened (listing it would hang a reader)

    async def session() -> None:
        with McpTools(root, ["read_image"]) as tools:
            async with Client(build_server(tools)) as client:
                listed = _text(await client.call_tool("list_files", {}))
                assert '"photo.png"' in listed and '"inner.png"' in listed
                assert "leak" not in listed and "up.png" not in listed and "secret" not in listed
                assert "pipe" not in listed
                for ref in ("leak.png", "sub/up.png", "outside/secret.png"):
                    out = await client.call_tool("read_image", {"image_ids": [ref]})
                    assert out.is_error and not _images(out), ref
                inner = await client.call_tool("read_image", {"image_ids": ["inner.png"]})
                assert not inner.is_error and _images(inner)
                # Swapped for a link out of the folder after it was listed: refused too.
                (root / "photo.png").rename(root / "was.png")
                (root / "photo.png").symlink_to(secret)
                swapped = await client.call_tool("read_image", {"image_ids": ["photo.png"]})
                assert swapped.is_error and not _images(swapped)
                assert "no longer leads to a file inside the folder" in _text(swapped)

    asyncio.run(session())
