"""Issue 32 part A through the agents, the tools and the report: what sandboxed code plants in its
workspace (links to root-only files, FIFOs, decompression bombs, folders swapped for links) never
reaches a model, a report or the harness's memory."""

from __future__ import annotations

import base64
import json
import os
import stat
import time
import uuid
from pathlib import Path

import pytest
from PIL import Image as PILImage
from typer.testing import CliRunner

from omnilab import _wsread
from omnilab.agents.coder.artifacts import workspace_outputs
from omnilab.agents.coder.tools import read_workspace_image
from omnilab.agents.view_files import save_view
from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.content import Audio, Image
from omnilab.media.cache import MediaCache
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ProviderError
from omnilab.models.fake_server import FakeOpenAIServer, reply_text, reply_tool_calls
from omnilab.models.providers.openai_wire import wire_messages
from omnilab.models.types import Message
from omnilab.report.media import MediaCopier
from omnilab.tools.code import _snapshot

runner = CliRunner()


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(tmp_path / "cache"))
    get_settings.cache_clear()


@pytest.fixture()
def secret(tmp_path: Path) -> tuple[Path, bytes]:
    """A root-only file (in a 0700 folder) with unique bytes, and those bytes."""
    folder = tmp_path / f"private-{uuid.uuid4().hex[:6]}"
    folder.mkdir(mode=0o700)
    data = f"ROOT-ONLY-{uuid.uuid4().hex}".encode()
    path = folder / "shadow"
    path.write_bytes(data)
    path.chmod(0o600)
    return path, data


@pytest.mark.parametrize("plant", ["file-link", "folder-link"])
def test_ask_never_sends_a_view_swapped_for_a_link(
    image_file: Path, tmp_path: Path, secret: tuple[Path, bytes], plant: str
) -> None:
    # Issue 32's reproduction: the model's code replaces the files under views/ with links to a
    # root-only file (or views/ itself with a link to a folder holding a file of the same name).
    target, data = secret
    (target.parent / "image_1.jpg").write_bytes(data)
    if plant == "file-link":
        code = (
            "import glob, os\n"
            "for p in glob.glob('views/*'):\n"
            f"    os.unlink(p); os.symlink({str(target)!r}, p)\n"
            "print('planted')"
        )
    else:
        code = (
            "import os, shutil\n"
            "shutil.rmtree('views')\n"
            f"os.symlink({str(target.parent)!r}, 'views')\n"
            "print('planted')"
        )
    out_dir = tmp_path / "run"
    with FakeOpenAIServer() as server:
        server.push(
            reply_tool_calls(("code_executor", {"code": code})),
            reply_text("<answer>done</answer>"),
        )
        model = f"vllm:Qwen2.5-Omni-7B@{server.base_url}"
        result = runner.invoke(
            app,
            [
                *("ask", str(image_file), "What is shown?", "--model", model, "--agent", "tir"),
                *("--mode", "active", "--tools", "code_executor", "--out", str(out_dir)),
            ],
        )
        bodies = [json.dumps(r.body) for r in server.chat_requests]
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    first = bodies[0]
    assert "image_url" in first  # the view was sent before the code ran
    leaked = base64.b64encode(data).decode()
    assert all(leaked not in body for body in bodies), "the root-only file reached the model"
    trajectory = (out_dir / "trajectory.jsonl").read_text()
    assert "planted" in trajectory and data.decode() not in trajectory


def test_views_replace_a_planted_link_and_are_read_without_links(
    tmp_path: Path, secret: tuple[Path, bytes]
) -> None:
    target, data = secret
    ws = tmp_path / "ws"
    (ws / "views").mkdir(parents=True)
    (ws / "views" / "image_1.jpg").symlink_to(target)
    out = save_view(PILImage.new("RGB", (8, 8)), ws / "views", "image_1.jpg")
    assert not out.is_symlink() and target.read_bytes() == data  # replaced, not written through
    out.unlink()
    out.symlink_to(target)
    with pytest.raises(ProviderError, match="link"):
        wire_messages([Message.user(Image(path=out))], Capabilities(image=True), "m")
    # Swapped for a regular decompression bomb: refused on its header, never decoded.
    out.unlink()
    PILImage.new("1", (9000, 9000)).save(out, format="PNG")
    caps = Capabilities(image=True, max_image_edge=512)
    with pytest.raises(ProviderError, match="pixels"):
        wire_messages([Message.user(Image(path=out, mime_type="image/png"))], caps, "m")


def test_report_never_copies_a_planted_perception_link(
    tmp_path: Path, secret: tuple[Path, bytes]
) -> None:
    # ``perception/<input>`` linked to a root-only file: ``omnilab report`` must not copy it.
    target, data = secret
    ws = tmp_path / "ws"
    (ws / "perception").mkdir(parents=True)
    for name in ("crop.png", "clip.wav"):
        (ws / "perception" / name).symlink_to(target)
    (ws / "views").symlink_to(target.parent)
    (target.parent / "frame.jpg").write_bytes(data)
    report = tmp_path / "report"
    gone = tmp_path / "gone"
    parts = [
        Image(path=gone / "crop.png"),  # found by name in the workspace's perception/
        Audio(path=gone / "clip.wav"),  # copied as it is, never decoded
        Image(path=ws / "views" / "frame.jpg"),  # at its own path, through a linked folder
    ]
    with MediaCopier(report, roots=(tmp_path,)) as copier:
        refs = [copier.ref(p, search=(ws,)) for p in parts]
    assert all(ref.src is None for ref in refs), refs
    copied = (
        [p.read_bytes() for p in (report / "media").glob("*")]
        if (report / "media").exists()
        else []
    )
    assert all(data not in blob for blob in copied)


def test_image_read_refuses_a_fifo_at_once_and_a_bomb_before_decoding(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "t.png")
    started = time.monotonic()
    with pytest.raises(ValueError, match="not a regular file"):
        read_workspace_image(ws, "t.png", 512)
    assert time.monotonic() - started < 2
    PILImage.new("1", (13_000, 13_000)).save(ws / "big.png", format="PNG")
    with pytest.raises(ValueError, match="13000x13000 pixels"):
        read_workspace_image(ws, "big.png", 512)
    (ws / "sub").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="link"):
        read_workspace_image(ws, "sub/ws/big.png", 512)


def test_snapshot_and_outputs_never_enter_a_linked_folder(
    tmp_path: Path, secret: tuple[Path, bytes]
) -> None:
    target, _ = secret
    ws = tmp_path / "ws"
    (ws / "out").mkdir(parents=True)
    (ws / "out" / "made.txt").write_text("x")
    (ws / "evil").symlink_to(target.parent)
    assert set(_snapshot(ws)) == {"out/made.txt", "evil"}
    listed = {e["path"]: e for e in workspace_outputs(ws)}
    assert set(listed) == {"out/made.txt", "evil"} and listed["evil"].get("link")


def test_media_cache_is_private(tmp_path: Path) -> None:
    root = tmp_path / "cache" / "media"
    root.mkdir(parents=True, mode=0o755)
    root.chmod(0o755)  # an older cache: tightened on first use
    cache = MediaCache(root, max_bytes=10**9)
    path = cache.get_or_create(
        cache.key(Path(__file__), "t", {}), ".bin", lambda p: p.write_bytes(b"x")
    )
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_marked_reads_are_one_line_errors(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "pipe.wav")
    _wsread.mark_untrusted(ws)
    with pytest.raises(OSError) as caught:
        Image(path=ws / "pipe.wav").read_bytes()
    assert str(caught.value) == f"{ws / 'pipe.wav'} is not a regular file"


def test_the_trajectory_never_hashes_a_planted_fifo_or_link(
    tmp_path: Path, secret: tuple[Path, bytes]
) -> None:
    from omnilab.trajectory.codec import file_hash

    target, _ = secret
    ws = tmp_path / "ws"
    (ws / "views").mkdir(parents=True)
    os.mkfifo(ws / "views" / "image_1.jpg")
    (ws / "views" / "image_2.jpg").symlink_to(target)
    _wsread.mark_untrusted(ws)
    started = time.monotonic()
    assert file_hash(ws / "views" / "image_1.jpg") is None  # not waited on
    assert file_hash(ws / "views" / "image_2.jpg") is None  # not followed
    assert time.monotonic() - started < 2
