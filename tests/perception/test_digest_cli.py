"""``omnilab digest``: Markdown and JSON output, --out, switches, and one-line user errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from omnilab.cli.main import app

runner = CliRunner()


def test_markdown_on_a_talk_video(talk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["digest", str(talk.path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, (result.output, result.exception)
    out = result.stdout
    assert "### Transcript (whisper, " in out
    assert "[00:0" in out  # segment times
    assert '"WELCOME TO OMNILAB"' in out and '"THE END"' in out
    assert "### Shots (3)" in out
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "digest.md",
        "digest.json",
        "talk.mp4.sheet.png",
    }


def test_json_without_ocr(talk) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["digest", str(talk.path), "--json", "--no-ocr", "--no-transcript"])
    assert result.exit_code == 0, (result.output, result.exception)
    data = json.loads(result.stdout)
    f = data["files"][0]
    assert f["screen_text"] is None and f["transcript"] is None
    assert len(f["shots"]) == 3 and f["events"][0]["label"] == "silence"


def run(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "omnilab", "digest", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_user_errors_are_one_line(talk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "OPENAI_API_KEY": ""}
    cases = {
        (str(tmp_path / "nope.mp4"),): "does not exist",
        (str(talk.path), "--asr", "whisper", "--language", "de"): "only knows English",
        (str(talk.path), "--asr", "openai"): "needs an API key",
        (str(talk.path), "--ocr", "easyocr"): "unknown OCR backend 'easyocr'",
    }
    for args, message in cases.items():
        done = run(*args, env=env)
        assert done.returncode == 1, done
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
        assert "Traceback" not in done.stderr


def test_text_file_digest(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Meeting moved to Friday.\n", encoding="utf-8")
    result = runner.invoke(app, ["digest", str(notes)])
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stdout == (
        "## notes.txt\nnotes.txt: text (txt), 25 bytes\n### Text\nMeeting moved to Friday.\n\n"
    )
