"""``omnilab mcp FOLDER`` where another user can write FOLDER (issue 42, reproduction 16): a file
swapped for a link with ``renameat2(RENAME_EXCHANGE)`` while tools read it, or for a FIFO, never
gives a file from outside the folder and never blocks; whatever the names cause comes back as a
tool error, never an exception out of ``McpTools.call``."""

from __future__ import annotations

import asyncio
import base64
import ctypes
import io
import os
import threading
import time
from pathlib import Path

import mcp_types as types
import pytest
from PIL import Image

from omnilab.media import synth
from omnilab.server.mcp import McpTools

RENAME_EXCHANGE = 2
AT_FDCWD = -100


def _sizes(result: types.CallToolResult) -> list[tuple[int, int]]:
    found = []
    for block in result.content:
        if isinstance(block, types.ImageContent):
            found.append(Image.open(io.BytesIO(base64.b64decode(block.data))).size)
    return found


def _text(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.fixture()
def served(tmp_path: Path) -> tuple[Path, Path]:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    secret = synth.make_image(private / "secret.png", size=(40, 40), index=6)
    secret.chmod(0o600)
    root = tmp_path / "served"
    root.mkdir()
    synth.make_image(root / "photo.png", size=(64, 48), index=3)
    return root, secret


def test_a_renameat2_swap_never_serves_a_file_from_outside(served: tuple[Path, Path]) -> None:
    root, secret = served
    libc = ctypes.CDLL(None, use_errno=True)
    (root / "swap.png").symlink_to(secret)
    photo, link = str(root / "photo.png").encode(), str(root / "swap.png").encode()
    if libc.renameat2(AT_FDCWD, photo, AT_FDCWD, link, RENAME_EXCHANGE) != 0:
        pytest.skip(f"renameat2(RENAME_EXCHANGE) unavailable here (errno {ctypes.get_errno()})")
    libc.renameat2(AT_FDCWD, photo, AT_FDCWD, link, RENAME_EXCHANGE)  # back: photo is the file
    stop = threading.Event()
    swaps = 0

    def swapping() -> None:
        nonlocal swaps
        while not stop.is_set():
            libc.renameat2(AT_FDCWD, photo, AT_FDCWD, link, RENAME_EXCHANGE)
            swaps += 1

    async def calls() -> tuple[int, int, set[tuple[int, int]]]:
        served_ok = refused = 0
        seen: set[tuple[int, int]] = set()
        with McpTools(root, ["read_image"]) as tools:
            racer = threading.Thread(target=swapping)
            racer.start()
            try:
                end = time.monotonic() + 2.0
                while time.monotonic() < end:
                    # Raises if anything escapes call(): that is a failure too.
                    out = await tools.call("read_image", {"image_ids": ["photo.png"]})
                    seen.update(_sizes(out))
                    served_ok += not out.is_error
                    refused += out.is_error
            finally:
                stop.set()
                racer.join()
        return served_ok, refused, seen

    served_ok, refused, seen = asyncio.run(calls())
    assert swaps > 100 and served_ok + refused > 10, (swaps, served_ok, refused)
    assert (40, 40) not in seen, f"the root-only image was served ({served_ok} served)"
    assert seen <= {(64, 48)}


def test_a_fifo_swapped_in_never_blocks_a_tool(tmp_path: Path, served: tuple[Path, Path]) -> None:
    root, _ = served
    synth.make_video(root / "talk.mp4", duration=2.0)

    async def session() -> None:
        with McpTools(root, ["read_image", "read_video"]) as tools:
            (root / "photo.png").unlink()
            os.mkfifo(root / "photo.png")
            (root / "talk.mp4").unlink()
            os.mkfifo(root / "talk.mp4")
            for name, args in (
                ("read_image", {"image_ids": ["photo.png"]}),
                ("read_video", {"video_id": "talk.mp4", "t_start": 0, "t_end": 1}),
            ):
                out = await asyncio.wait_for(tools.call(name, args), timeout=20)
                assert out.is_error and "not a regular file" in _text(out), _text(out)

    asyncio.run(session())


def test_names_that_break_path_calls_are_tool_errors(served: tuple[Path, Path]) -> None:
    root, _ = served

    async def session() -> None:
        with McpTools(root, ["read_image"]) as tools:
            for ref in ("photo.png\x00", "../private/secret.png", "a" * 5000, "<photo.png\x00>"):
                out = await tools.call("read_image", {"image_ids": [ref]})
                assert out.is_error and not _sizes(out), ref
            (root / "photo.png").unlink()  # gone after listing
            out = await tools.call("read_image", {"image_ids": ["photo.png"]})
            assert out.is_error and "no longer leads to a file inside the folder" in _text(out)

    asyncio.run(session())
