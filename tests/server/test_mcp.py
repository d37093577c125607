"""``omnilab mcp``: the tools over MCP, tested with the official SDK's own client, in process and
as a stdio subprocess; files outside the served folder cannot be named."""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.media import synth
from omnilab.server.mcp import McpTools, build_server


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "served"
    (root / "clips").mkdir(parents=True)
    synth.make_video(root / "clips" / "talk.mp4", duration=3.0)
    synth.make_image(root / "photo.png", size=(64, 48), index=3)
    (root / ".hidden.txt").write_text("not listed")
    synth.make_image(tmp_path / "secret.png", size=(32, 32), index=1)  # outside the folder
    return root


def _texts(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


def test_an_mcp_client_lists_the_tools_and_gets_frames_back(folder: Path) -> None:
    async def session() -> None:
        with McpTools(folder, ["read_video", "read_audio", "read_image"]) as tools:
            async with Client(build_server(tools)) as client:
                listed = await client.list_tools()
                names = {t.name for t in listed.tools}
                assert names == {"list_files", "read_video", "read_audio", "read_image"}
                video = next(t for t in listed.tools if t.name == "read_video")
                assert set(video.input_schema["properties"]) == {"video_id", "t_start", "t_end"}

                files = await client.call_tool("list_files", {})
                assert '"clips/talk.mp4"' in _texts(files) and "hidden" not in _texts(files)

                frames = await client.call_tool(
                    "read_video", {"video_id": "clips/talk.mp4", "t_start": 0, "t_end": 2}
                )
                images = [b for b in frames.content if isinstance(b, types.ImageContent)]
                assert not frames.is_error and images
                assert base64.b64decode(images[0].data)[:4] in (b"\x89PNG", b"\xff\xd8\xff\xe0")

                sound = await client.call_tool(
                    "read_audio", {"audio_id": "clips/talk.mp4", "t_start": 0, "t_end": 1}
                )
                assert any(isinstance(b, types.AudioContent) for b in sound.content), sound

                outside = await client.call_tool("read_image", {"image_ids": ["../secret.png"]})
                assert outside.is_error and "secret" not in _texts(outside).split("ids:")[-1]
                unknown = await client.call_tool("rm_rf", {})
                assert unknown.is_error and "unknown tool" in _texts(unknown)

    asyncio.run(session())


@pytest.mark.slow
def test_omnilab_mcp_over_stdio(folder: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "omnilab", "mcp", str(folder)]
    )

    async def session() -> list[str]:
        async with Client(params) as client:
            listed = await client.list_tools()
            shot = await client.call_tool("read_image", {"image_ids": ["photo.png"]})
            assert any(isinstance(b, types.ImageContent) for b in shot.content)
            return sorted(t.name for t in listed.tools)

    names = asyncio.run(session())
    assert "code_executor" in names and "web_search" in names and "list_files" in names


def test_cli_user_errors_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["mcp", str(tmp_path / "nope")])
    assert result.exit_code != 0
    assert "is not a folder" in (result.output + str(result.exception))
