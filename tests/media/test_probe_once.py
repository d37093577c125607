"""Issue 42, reproductions 6 and 12: ``probe`` opens a file once and works on that descriptor (the
check and the use are the same object), and video pictures have a pixel limit like images,
checked from the stream header before anything is decoded."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import av
import pytest
from typer.testing import CliRunner

from omnilab import _wsread
from omnilab.cli.main import app
from omnilab.media import MediaError, frames, probe
from omnilab.media.errors import MediaErrorCode

probe_module = importlib.import_module("omnilab.media.probe")


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    _wsread.mark_untrusted(folder)
    return folder


@pytest.fixture()
def secret_video(tmp_path: Path, video: Path) -> Path:
    target = tmp_path / "private" / "secret.mp4"
    target.parent.mkdir()
    target.write_bytes(video.read_bytes())
    target.chmod(0o600)
    return target


@pytest.mark.parametrize("depth", [0, 2])
def test_a_name_swapped_for_a_link_after_the_check_is_not_probed(
    ws: Path,
    video: Path,
    secret_video: Path,
    monkeypatch: pytest.MonkeyPatch,
    depth: int,
) -> None:
    folder = ws.joinpath(*[f"d{i}" for i in range(depth)])
    folder.mkdir(parents=True, exist_ok=True)
    name = folder / "clip.mp4"
    name.write_bytes(video.read_bytes())
    real_check = probe_module.check_file

    def check_then_swap(path: Any) -> Path:
        checked: Path = real_check(path)
        # Another process swaps the checked name for a link to a 0600 video right then.
        name.replace(folder / "old.mp4")
        name.symlink_to(secret_video)
        return checked

    monkeypatch.setattr(probe_module, "check_file", check_then_swap)
    with pytest.raises(MediaError):
        probe(name)


def test_every_reader_of_a_probe_reads_the_one_opened_file(
    ws: Path, video: Path, secret_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swapped after the open (between the readers), the name no longer matters."""
    name = ws / "clip.mp4"
    name.write_bytes(video.read_bytes())
    opened: list[str] = []
    real_open = av.open

    def spy(source: Any, *args: Any, **kw: Any) -> Any:
        opened.append(str(source))
        name.replace(ws / "old.mp4")
        if not name.exists():
            name.symlink_to(secret_video)
        return real_open(source, *args, **kw)

    monkeypatch.setattr(av, "open", spy)
    info = probe(name)
    assert opened and all(s.startswith("/proc/self/fd/") for s in opened)
    assert info.path == name and info.has_video


@pytest.fixture(scope="module")
def huge_frames(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 8192x8192 H.264 picture, about 200 KB on disk (1.6 GB once decoded three times)."""
    path = tmp_path_factory.mktemp("huge") / "huge.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=1)
        stream.width = stream.height = 8192
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "51"}
        picture = av.VideoFrame(8192, 8192, "yuv420p")
        for plane, value in zip(picture.planes, (16, 128, 128), strict=True):
            plane.update(bytes([value]) * plane.buffer_size)
        for packet in stream.encode(picture):
            out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    assert path.stat().st_size < 400_000
    return path


@pytest.mark.slow
def test_video_pictures_over_the_pixel_limit_are_refused_before_decoding(
    huge_frames: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = probe(huge_frames)  # the header is still described
    assert (info.width, info.height) == (8192, 8192)
    decoded: list[object] = []
    monkeypatch.setattr(av.VideoFrame, "reformat", lambda *a, **k: decoded.append(a))
    with pytest.raises(MediaError) as refused:
        frames(huge_frames, num=3)
    assert refused.value.code is MediaErrorCode.TOO_MANY_PIXELS
    assert "8192x8192" in refused.value.message and "\n" not in refused.value.message
    assert not decoded


@pytest.mark.slow
def test_media_frames_refuses_it_in_one_line(huge_frames: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["media", "frames", str(huge_frames), "--num", "3", "--out", str(tmp_path / "f")]
    )
    assert isinstance(result.exception, MediaError), (result.output, result.exception)
    assert result.exception.code is MediaErrorCode.TOO_MANY_PIXELS
    assert not (tmp_path / "f").exists() or not any((tmp_path / "f").iterdir())
