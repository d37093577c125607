"""The ``omnilab`` command: each media command on generated files, user errors, and the demo.

Successful runs go through typer's CliRunner (fast, in-process); user errors go through a real
``python -m omnilab`` process, because only that exercises ``main()``'s one-line error handling.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.media import MediaError, MediaErrorCode, frames, probe, synth
from omnilab.media.image import load_image
from omnilab.media.sheet import GAP

runner = CliRunner()


def ok(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def run(
    *args: str | Path, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "omnilab", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def fails(*args: str | Path) -> str:
    """Run a command that must fail as a user error; return its one-line message."""
    proc = run(*args)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0].removeprefix("error: ")


def test_version_and_help() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == "omnilab 0.1.0.dev0"
    text = ok("media", "--help")
    for command in ("probe", "frames", "audio", "clip", "crop", "sheet"):
        assert command in text


def test_probe(video: Path) -> None:
    text = ok("media", "probe", video)
    assert "video.mp4: video (mp4), 320x240, duration 4.0 s, 25 fps, with audio" in text
    data = json.loads(ok("media", "probe", video, "--json"))
    assert data["kind"] == "video"
    assert (data["width"], data["height"], data["frame_count"]) == (320, 240, 100)
    assert data["duration"] == pytest.approx(4.0, abs=0.05)


def test_frames_range(video: Path, tmp_path: Path) -> None:
    out = tmp_path / "new" / "frames"
    text = ok("media", "frames", video, "--start", "1", "--end", "3", "--num", "5", "--out", out)
    files = sorted(out.iterdir())
    # 1.0 .. 3.0 s in 0.5 s steps at 25 fps: frames 25, 37 (at 1.48 s), 50, 62, 75.
    expected = [25, 37, 50, 62, 75]
    assert [f.name for f in files] == [f"{i:03d}_{n / 25:.3f}s.jpg" for i, n in enumerate(expected)]
    assert [synth.read_index(Image.open(f)) for f in files] == expected
    assert "5 frames of video.mp4" in text
    assert "1.500" in text and "1.480" in text  # requested and actual time of frame 1


def test_frames_at_times_with_max_edge(video: Path, tmp_path: Path) -> None:
    ok("media", "frames", video, "--at", "3.1, 0.5", "--max-edge", "80", "--out", tmp_path)
    files = sorted(tmp_path.glob("*.jpg"))
    assert [f.name for f in files] == ["000_3.080s.jpg", "001_0.480s.jpg"]
    images = [Image.open(f) for f in files]
    assert [im.size for im in images] == [(80, 60), (80, 60)]
    assert [synth.read_index(im) for im in images] == [77, 12]


def test_frames_keyframes_only(video: Path, tmp_path: Path) -> None:
    text = ok("media", "frames", video, "--num", "4", "--keyframes-only", "-o", tmp_path)
    names = sorted(f.name for f in tmp_path.iterdir())
    # Requests at 0, 1.33, 2.67 and 4 s fall back to the keyframes of the 1 s GOP.
    assert names == ["000_0.000s.jpg", "001_1.000s.jpg", "002_2.000s.jpg", "003_3.000s.jpg"]
    assert text.count("yes") == 4


def test_audio(video: Path, tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "speech.wav"
    text = ok("media", "audio", video, "--start", "1", "--end", "2.5", "--out", out)
    assert f"wrote {out}" in text
    with wave.open(str(out)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 16_000)
        assert w.getnframes() == 24_000
        pcm = np.frombuffer(w.readframes(16_000), dtype="<i2").astype(np.float32)
    # Second 1 of the synthetic soundtrack is a pure tone of tone_freq(1).
    assert synth.dominant_frequency(pcm[1600:14400], 16_000) == pytest.approx(
        synth.tone_freq(1), abs=5
    )


def test_clip(video: Path, tmp_path: Path) -> None:
    out = tmp_path / "cut.mp4"
    ok("media", "clip", video, "--start", "1", "--end", "3", "--out", out)
    info = probe(out)
    assert (info.width, info.height, info.fps, info.has_audio) == (320, 240, 25.0, True)
    assert info.frame_count == 50
    first, last = frames(out, 0.0, 1.96, 2)
    assert (synth.read_index(first.image), synth.read_index(last.image)) == (25, 74)


def test_clip_to_the_end_with_max_edge(video: Path, tmp_path: Path) -> None:
    out = tmp_path / "tail.mp4"
    ok("media", "clip", video, "--start", "3", "--max-edge", "160", "--out", out)
    info = probe(out)
    assert (info.width, info.height, info.frame_count) == (160, 120, 25)


def test_crop(tmp_path: Path) -> None:
    src = synth.make_image(tmp_path / "phone.jpg", size=(320, 240), exif_orientation=6, index=3)
    out = tmp_path / "crops" / "top.png"
    text = ok("media", "crop", src, "--box", "100,10,240,90", "--out", out)
    assert "140x80" in text
    cut = np.asarray(Image.open(out))
    # The box is in upright coordinates: the same pixels load_image shows there.
    assert np.array_equal(cut, np.asarray(load_image(src))[10:90, 100:240])


def test_sheet(video: Path, tmp_path: Path) -> None:
    out = tmp_path / "sheet.png"
    ok("media", "sheet", video, "--num", "4", "--tile-edge", "160", "--out", out)
    sheet = Image.open(out).convert("RGB")
    assert sheet.size == (2 * 160 + 3 * GAP, 2 * 120 + 3 * GAP)
    origins = [(GAP + c * (160 + GAP), GAP + r * (120 + GAP)) for r in range(2) for c in range(2)]
    cells = [sheet.crop((x, y, x + 160, y + 120)) for x, y in origins]
    assert [synth.read_index(c) for c in cells] == [12, 37, 62, 87]


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["media", "probe", "{tmp}/missing.mp4"], r"missing\.mp4 does not exist"),
        (
            ["media", "frames", "{video}", "--start", "9", "-o", "{tmp}/f"],
            r"start 9\.0 s is past the end of video\.mp4",
        ),
        (
            ["media", "frames", "{video}", "--num", "999", "-o", "{tmp}/f"],
            r"OMNILAB_MEDIA__MAX_FRAMES",
        ),
        (["media", "frames", "{video}", "--at", "1,x", "-o", "{tmp}/f"], r"--at must be seconds"),
        (["media", "frames", "{video}", "-o", "{video}"], r"is a file; frames need a folder"),
        (
            ["media", "frames", "{audio}", "-o", "{tmp}/f"],
            r"tones\.wav is an audio file with no video stream",
        ),
        (
            ["media", "audio", "{image}", "-o", "{tmp}/x.wav"],
            r"image\.png is an image: it has no audio stream",
        ),
        (["media", "audio", "{video}", "-o", "{tmp}/x.mp3"], r"must end in \.wav"),
        (
            ["media", "audio", "{video}", "--start", "3", "--end", "2", "-o", "{tmp}/x.wav"],
            r"start 3\.0 s is after end 2\.0 s",
        ),
        (
            ["media", "clip", "{video}", "-o", "{tmp}"],
            r"is a folder; give a file name such as .*out\.mp4",
        ),
        (["media", "clip", "{video}", "-o", "{video}"], r"is the input file"),
        (
            ["media", "crop", "{image}", "--box", "1,2,3", "-o", "{tmp}/c.png"],
            r"--box must be four pixel numbers",
        ),
        (
            ["media", "crop", "{image}", "--box", "a,b,c,d", "-o", "{tmp}/c.png"],
            r"--box must be four pixel numbers .*'a,b,c,d'",
        ),
        (
            ["media", "crop", "{image}", "--box", "0,0,400,100", "-o", "{tmp}/c.png"],
            r"outside image\.png \(320x240",
        ),
        (
            ["media", "crop", "{image}", "--box", "0,0,10,10", "-o", "{tmp}/c.txt"],
            r"must end in \.jpg",
        ),
        (
            ["media", "crop", "{video}", "--box", "0,0,10,10", "-o", "{tmp}/c.png"],
            r"video\.mp4 is a video file, not an image",
        ),
        (
            ["media", "sheet", "{video}", "--num", "0", "-o", "{tmp}/s.jpg"],
            r"num must be at least 1",
        ),
    ],
)
def test_user_errors_are_one_line(
    args: list[str],
    pattern: str,
    video: Path,
    audio_file: Path,
    image_file: Path,
    tmp_path: Path,
) -> None:
    paths = {"video": video, "audio": audio_file, "image": image_file, "tmp": tmp_path}
    message = fails(*(a.format(**paths) for a in args))
    assert re.search(pattern, message), message
    # A refused request leaves nothing behind, not even the output folder.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == []


def test_parse_box_errors_are_media_errors() -> None:
    from omnilab.cli.media import parse_box

    assert parse_box(" 1, 2,3.5 ,4") == (1.0, 2.0, 3.5, 4.0)
    assert parse_box("1 2 3 4") == (1.0, 2.0, 3.0, 4.0)
    for bad in ("", "1,2,3,4,5", "1,,2,3", "1;2;3;4"):
        with pytest.raises(MediaError) as err:
            parse_box(bad)
        assert err.value.code is MediaErrorCode.INVALID_BOX


def test_demo(tmp_path: Path) -> None:
    """The main job: an agent run on a generated video with the embedded defaults, offline."""
    from omnilab.models.registry import local_model_available
    from omnilab.trajectory import read_trajectory

    # No time limit asserted here (timings are measured by bench/embedded.py, not by tests):
    # on a loaded machine the embedded model alone can take minutes.
    proc = run("demo", "--out", "tour", cwd=tmp_path, timeout=900)
    if not local_model_available():
        assert proc.returncode == 1 and "pip install 'omnilab[local]'" in proc.stderr
        return
    out = tmp_path / "tour"
    assert probe(out / "sample.mp4").duration == pytest.approx(8.0, abs=0.05)
    saved = read_trajectory(out / "run" / "trajectory.jsonl")
    assert saved.run_end is not None and saved.status in ("answered", "budget", "no_answer")
    # Exit 0 only when it answered, 3 when it ran without an answer (omnilab.cli.exit_codes).
    assert proc.returncode == (0 if saved.status == "answered" else 3), proc.stderr
    assert "step 1" in proc.stdout and "do not expect a correct answer" in proc.stdout
    assert str(Path("tour") / "run" / "trajectory.jsonl") in proc.stdout
