"""Issue 42, reproduction 5: a trajectory is data. ``omnilab view`` / ``omnilab report`` copy only
files beneath the run folder (and the harness's media cache, and folders the operator names
with ``--media-root``), through no link; any other path a message part names becomes a
placeholder with a notice."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image as PILImage
from typer.testing import CliRunner

import omnilab
from omnilab._ownfolders import UnsafeFolderError
from omnilab.cli.main import app

SECRET = b"-----BEGIN OPENSSH PRIVATE KEY----- root only\n"


@pytest.fixture()
def run(tmp_path: Path) -> tuple[Path, str]:
    """An ``omnilab ask`` run folder and the JSON of its image part (to be rewritten)."""
    image = tmp_path / "img.png"
    PILImage.new("RGB", (32, 32), "red").save(image)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"outputs": ["<answer>x</answer>"], "repeat": True}))
    result = omnilab.ask([image], "what?", model=f"scripted:{script}", run_dir=tmp_path / "run")
    part = json.dumps(
        {
            "path": str(image.resolve()),
            "data": None,
            "mime_type": None,
            "type": "image",
            "box": None,
        },
        separators=(",", ":"),
    )
    assert part in result.trajectory_path.read_text()
    return result.trajectory_path, part


def plant(trajectory: Path, part: str, parts: list[dict[str, object]]) -> None:
    text = trajectory.read_text()
    planted = ",".join(json.dumps(p, separators=(",", ":")) for p in parts)
    trajectory.write_text(text.replace(part, planted))


def copied(report: Path) -> list[bytes]:
    media = report / "media"
    return [p.read_bytes() for p in media.iterdir()] if media.is_dir() else []


@pytest.mark.parametrize("kind", ["audio", "document", "video", "image"])
def test_parts_naming_files_outside_the_run_become_placeholders(
    tmp_path: Path, run: tuple[Path, str], kind: str
) -> None:
    trajectory, part = run
    secret = tmp_path / "etc" / "shadow"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    folder = trajectory.parent
    (folder / "sub" / "deeper").mkdir(parents=True)
    escapes = [
        str(secret),  # absolute, outside
        str(folder / ".." / "etc" / "shadow"),  # '..' from the run folder
        str(folder / "sub" / "deeper" / ".." / ".." / ".." / "etc" / "shadow"),
    ]
    (folder / "linked.bin").symlink_to(secret)  # beneath the run, a link out
    escapes.append(str(folder / "linked.bin"))
    plant(trajectory, part, [{"type": kind, "path": p} for p in escapes])
    result = CliRunner().invoke(app, ["view", str(trajectory), "--out", str(tmp_path / "view")])
    assert result.exit_code == 0, (result.output, result.exception)
    assert all(SECRET not in blob for blob in copied(tmp_path / "view"))
    page = (tmp_path / "view" / "trajectory.html").read_text()
    assert "outside its run folder" in page


def test_files_beneath_the_run_and_named_roots_are_still_shown(
    tmp_path: Path, run: tuple[Path, str]
) -> None:
    trajectory, part = run
    saved = trajectory.parent / "workspace" / "clip.wav"
    saved.write_bytes(b"RIFF saved")
    plant(trajectory, part, [{"type": "audio", "path": str(saved)}, json.loads(part)])
    out = tmp_path / "view"
    result = CliRunner().invoke(app, ["view", str(trajectory), "--out", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    assert b"RIFF saved" in copied(out)
    # The question's image lies outside the run: a placeholder, unless the operator names it.
    assert len(copied(out)) == 1
    again = tmp_path / "view2"
    named = ["view", str(trajectory), "--out", str(again), "--media-root", str(tmp_path)]
    assert CliRunner().invoke(app, named).exit_code == 0
    assert len(copied(again)) == 3  # the clip, and the image's large view and thumbnail


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's link needs root")
def test_a_media_root_that_is_another_users_link_is_refused(
    tmp_path: Path, run: tuple[Path, str]
) -> None:
    # Alice's link in a sticky /tmp-like folder, pointing at root's own folder: the trajectory
    # (hers too, perhaps) names the key beneath it; nothing is copied, one line is printed.
    trajectory, part = run
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "id_ed25519").write_bytes(SECRET)
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    link = shared / "media"
    link.symlink_to(private)
    os.lchown(link, 65534, 65534)
    plant(trajectory, part, [{"type": "document", "path": str(link / "id_ed25519")}])
    out = tmp_path / "view"
    named = ["view", str(trajectory), "--out", str(out), "--media-root", str(link)]
    result = CliRunner().invoke(app, named)
    assert result.exit_code == 1 and isinstance(result.exception, UnsafeFolderError)
    message = str(result.exception)
    assert "is a link owned by" in message and "--media-root" in message and "\n" not in message
    assert all(SECRET not in blob for blob in copied(out))
