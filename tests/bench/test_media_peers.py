"""``bench/media_peers.py`` measures each tool in a fresh process and reads exactness back."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
from PIL import Image

from omnilab.media import synth


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "media_peers.py"
    spec = importlib.util.spec_from_file_location("media_peers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["media_peers"] = module
    spec.loader.exec_module(module)
    return module


peers = _load()


@pytest.fixture(scope="module")
def marked(media_dir: Path) -> Path:
    """2 s whose frames show their index (as bench/footage.py draws it), with sound."""
    return synth.make_video(media_dir / "peers.mp4", duration=2.0, size=(160, 96))


@pytest.mark.slow
def test_omnilab_and_ffmpeg_rows_are_exact_and_measured(marked: Path, tmp_path: Path) -> None:
    wanted = peers.wanted_indices(marked, 6)
    assert wanted == [0, 10, 20, 29, 39, 49]
    exe = peers.ffmpeg_binaries()["ffmpeg-imageio"]
    for peer, program in (("omnilab", sys.executable), ("ffmpeg-imageio", exe)):
        run = peers.frames_once(peer, program, marked, wanted, tmp_path, True)
        assert run.exact == "6/6", peer
        assert run.cpu_s > 0 and run.wall_s > 0 and 1 < run.rss_mb < 2000
    sound = peers.audio_once("omnilab", sys.executable, marked, tmp_path)
    assert sound.exact == f"{2 * peers.RATE} samples"


def test_a_wrong_frame_is_not_counted_as_exact(tmp_path: Path) -> None:
    for k, index in enumerate((3, 4)):
        Image.fromarray(synth.index_pattern(index, 160, 96)).save(tmp_path / f"{k}.jpg")
    files = sorted(tmp_path.glob("*.jpg"))
    assert peers._exactness("decord", tmp_path, files, [3, 5]) == "1/2"


def test_a_peer_without_its_venv_is_skipped_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert peers.python_of("decord", tmp_path) is None
    row = peers.Row("decord", "32 frames")

    def fails() -> object:
        raise RuntimeError("python failed: ModuleNotFoundError: No module named 'decord'")

    peers._measure(row, fails)
    assert row.skipped.endswith("No module named 'decord'") and not row.runs
    peers._table([row])
    assert "| 32 frames | decord | skipped: " in capsys.readouterr().out


def test_the_baseline_row_runs_omnilab_from_the_given_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, object] = {}

    def fake_run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[object, str]:
        seen["cmd"], seen["env"] = cmd, env
        return peers.Run(1.0, 1.0, 10.0), '{"cpu": 0.5, "files": []}'

    old = tmp_path / "before" / "src"
    monkeypatch.setattr(peers, "run", fake_run)
    monkeypatch.setattr(peers, "BASELINE_SRC", [str(old)])
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    got = peers.frames_once("omnilab-baseline", sys.executable, Path("v.mp4"), [0], tmp_path, False)
    env = seen["env"]
    assert isinstance(env, dict)
    # The same child code as the omnilab row, with the other checkout first on the path.
    assert env["PYTHONPATH"].split(os.pathsep) == [str(old), "/elsewhere"]
    assert peers.CHILD["omnilab"] in seen["cmd"]  # type: ignore[operator]
    assert got.cpu_s == 0.5 and got.exact == "not checked"
    assert peers.python_of("omnilab-baseline", tmp_path) == Path(sys.executable)


def test_looped_footage_repeats_every_picture_and_says_its_period(
    marked: Path, tmp_path: Path
) -> None:
    """``bench/footage.py --loops``: long footage by stream copy, every picture decodable in
    order, and the exactness check compares indices within the loop."""
    import av

    footage = sys.modules["footage"]  # imported by media_peers from bench/
    looped = footage.repeat(marked, tmp_path / "looped.mp4", 3)
    with av.open(str(marked)) as c:
        once = sum(1 for _ in c.decode(video=0))
    with av.open(str(looped)) as c:
        shown = [synth.read_index(f.to_image()) for f in c.decode(video=0)]
    assert shown == list(range(once)) * 3
    assert footage.loop_frames(looped) == once and footage.loop_frames(marked) is None
    for k, index in enumerate((7, 8)):
        Image.fromarray(synth.index_pattern(index, 160, 96)).save(tmp_path / f"{k}.jpg")
    files = sorted(tmp_path.glob("*.jpg"))
    peers.LOOP[:] = [once]
    try:
        assert peers._exactness("decord", tmp_path, files, [once + 7, 2 * once + 9]) == "1/2"
    finally:
        peers.LOOP.clear()
