"""An input that does not decode is refused before anything runs (one line, exit 1), or with
``--allow-unreadable`` run anyway with a warning on screen and in the run header."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import omnilab
from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.inputs import InputSet, InputUnreadableError
from omnilab.media import synth

runner = CliRunner()


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    get_settings.cache_clear()


@pytest.fixture()
def cut_short(tmp_path: Path) -> Path:
    """A video cut short with its index at the front: it probes, but stops at about 40%."""
    whole = synth.make_video(tmp_path / "whole.mp4", duration=4.0, size=(320, 240))
    from omnilab.media import clip

    front = clip(whole, 0.0, 4.0, out=tmp_path / "front.mp4")  # omnilab writes the index first
    data = front.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) * 2 // 5])
    return cut


def broken_files(tmp_path: Path) -> list[Path]:
    notes = tmp_path / "notes.mp4"
    notes.write_text("just my notes, not a video\n")
    damaged = tmp_path / "damaged.mp4"
    damaged.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(2000))
    return [notes, damaged]


def test_cli_refuses_an_undecodable_input_in_one_line(tmp_path: Path, cut_short: Path) -> None:
    for bad in [*broken_files(tmp_path), cut_short]:
        proc = subprocess.run(
            [sys.executable, "-m", "omnilab", "ask", str(bad), "What is shown?"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert proc.returncode == 1 and proc.stdout == "", proc.stderr  # nothing started
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {bad}: not a readable video ")
        assert "--allow-unreadable" in lines[0] and "Traceback" not in proc.stderr
        assert not (tmp_path / "runs").exists()


def test_cut_short_video_is_named_as_such(cut_short: Path) -> None:
    (problem,) = InputSet.from_paths([cut_short]).check_readable(allow=True)
    assert "[CORRUPT]" in problem and "cut short" in problem


def test_allow_unreadable_warns_on_screen_and_in_the_header(tmp_path: Path) -> None:
    notes, _ = broken_files(tmp_path)
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["<answer>no video</answer>"]))
    args = ["ask", str(notes), "What?", "--model", f"scripted:{script}"]
    shown = runner.invoke(app, [*args, "--allow-unreadable"], terminal_width=300)
    assert shown.exit_code == 0, shown.output
    assert "warning: unreadable input" in shown.output and "notes.mp4" in shown.output
    quiet = runner.invoke(app, [*args, "--allow-unreadable", "--json"])
    assert quiet.exit_code == 0
    assert "warning: unreadable input" in quiet.stderr
    assert json.loads(quiet.stdout)["answer"] == "no video"


def test_python_api_refuses_unless_allowed(tmp_path: Path) -> None:
    notes, _ = broken_files(tmp_path)
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["<answer>x</answer>"]))
    with pytest.raises(InputUnreadableError, match=r"notes\.mp4: not a readable video"):
        omnilab.ask([notes], "What?", model=f"scripted:{script}")
    result = omnilab.ask([notes], "What?", model=f"scripted:{script}", allow_unreadable=True)
    listing = result.trajectory.messages()[1].text
    assert "notes.mp4, unreadable [UNSUPPORTED]" in listing  # the agent is told


def test_probe_of_a_text_file_agrees_with_the_docs(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    shown = runner.invoke(app, ["media", "probe", str(notes)])
    assert shown.exit_code == 0 and "notes.txt: text (txt)" in shown.output
    docs = (Path(__file__).resolve().parents[2] / "docs" / "media.md").read_text()
    assert "`omnilab media probe notes.txt` says `notes.txt: text (txt)" in docs
    assert "a text file under a media name (`notes.mp4`)" in docs  # what UNSUPPORTED covers
