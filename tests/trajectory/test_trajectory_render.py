"""render_text and ``omnilab trace``: the compact view of a saved run, and its JSON form."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.trajectory import read_trajectory, render_text

runner = CliRunner()


def test_render_shows_each_step_in_order(run_file: Path) -> None:
    lines = render_text(read_trajectory(run_file)).splitlines()
    assert lines == [
        "run run-1 task task-1 agent tir",
        "question: What number is shown in <video_1>?",
        "models: agent=scripted:agent perception=scripted:perception",
        "inputs: video_1 (video, v.mp4)",
        "system: You are an omni-modal assistant.",
        "user: What number is shown in <video_1>?",
        "[1] say: Let me look.",
        '    call read_video(video_id="video_1", t_start=0, t_end=2)',
        "    side call scripted:perception: It shows 42.",
        "    -> read_video 0.2s: [1 image] t=0.0 s | t=1.0 s",
        "user: Step 2 of 5.",
        "[2] think: The frame shows 42.",
        "    say: <answer>42</answer>",
        "answer: 42",
        "error [judge]: judge unavailable, exact match only",
        "end: answered, 2 turns, 59 tokens (47 in, 12 out), 1.5s",
    ]


def test_render_cuts_lines_to_width(run_file: Path) -> None:
    text = render_text(read_trajectory(run_file), width=30)
    assert all(len(line) <= 30 for line in text.splitlines())
    assert "question: What number is show…" in text


def test_render_of_a_cut_off_run_says_so(run_file: Path) -> None:
    lines = run_file.read_text(encoding="utf-8").splitlines()
    run_file.write_text("\n".join(lines[:-3]) + "\n" + lines[-3][:40], encoding="utf-8")
    text = render_text(read_trajectory(run_file))
    assert "(no end event: the run was cut off or is still running)" in text
    assert "warning: line" in text and "is incomplete" in text
    assert "answer:" not in text


def test_trace_prints_the_rendering(run_file: Path) -> None:
    result = runner.invoke(app, ["trace", str(run_file), "--width", "200"])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip("\n") == render_text(read_trajectory(run_file), width=200)


def test_trace_json_has_header_and_every_event(run_file: Path) -> None:
    result = runner.invoke(app, ["trace", str(run_file), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["header"]["run_id"] == "run-1" and data["truncated"] is False
    kinds = [e["kind"] for e in data["events"]]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert len(kinds) == len(read_trajectory(run_file).events)


def test_trace_of_a_bad_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "omnilab-trajectory", "schema_version": 42}\n', encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "trace", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "schema version 42" in line
