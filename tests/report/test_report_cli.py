"""``omnilab report`` after a real ``omnilab eval`` (the ``tir`` agent, scripted models, generated
media), the comparison of two runs, ``omnilab view``, and one-line errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.bench.metrics import compare_runs
from omnilab.bench.run_dir import RunDir
from omnilab.cli.main import app
from omnilab.errors import OmnilabError

runner = CliRunner()


def cli(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


@pytest.mark.slow
def test_report_of_an_eval_run_shows_the_audio_the_agent_heard(
    tmp_path: Path, image_file: Path, audio_file: Path
) -> None:
    items = [
        {
            "id": f"q{i}",
            "question": f"What colour is thing {i}?",
            "answer": "blue" if i % 2 else "red",
            "Level": ("Easy", "Hard")[i % 2],
            "category": "Art",
            "omni_modal_input": [
                {"type": "image", "id": "image_1", "path": str(image_file)},
                {"type": "audio", "id": "audio_1", "path": str(audio_file)},
            ],
        }
        for i in range(2)
    ]
    data = tmp_path / "tasks.json"
    data.write_text(json.dumps(items))
    listen = {
        "tool_call": {
            "name": "read_audio",
            "arguments": {"audio_id": "audio_1", "t_start": 0, "t_end": 1},
        }
    }
    script = tmp_path / "agent.json"
    script.write_text(json.dumps({"outputs": [listen, "<answer>blue</answer>"], "repeat": True}))
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"outputs": ["Incorrect"], "repeat": True}))
    run = tmp_path / "run"
    cli(
        "eval",
        "omnigaia",
        "--data",
        data,
        "--media-root",
        image_file.parent,  # where the session's media lie (their paths are absolute)
        "--agent",
        "tir",
        "--model",
        f"scripted:{script}",
        "--judge",
        f"scripted:{judge}",
        "--out",
        run,
        "--no-progress",
        "--concurrency",
        "1",
    )
    out = tmp_path / "report"
    # The audio the agent heard is the dataset's: shown when the operator names its folder.
    printed = cli("report", run, "--out", out, "--media-root", image_file.parent).strip()
    assert printed == str(out / "index.html")
    index = (out / "index.html").read_text()
    assert "50.0%" in index and 'href="tasks/q0.html"' in index
    task = (out / "tasks" / "q1.html").read_text()
    assert '<span class="tool">read_audio</span>' in task
    players = re.findall(r'<audio controls preload="metadata" src="\.\./(media/[^"#]+)', task)
    assert players and all((out / p).is_file() for p in players)


def test_comparison_pairs_tasks_and_links_both_trajectories(
    run_a: Path, run_b: Path, report_ab: Path
) -> None:
    html = (report_ab / "index.html").read_text(encoding="utf-8")
    test = compare_runs(RunDir(run_a).results(), RunDir(run_b).results())
    assert f"<td>{test.both_correct}</td><td>{test.only_a}</td>" in html
    assert f"<td>{test.only_b}</td><td>{test.both_wrong}</td>" in html
    assert f'<b class="pvalue">{test.p_value:.4g}</b>' in html
    pairs = re.findall(r'<tr data-pair="([a-z-]+)"', html)
    assert pairs.count("a-only") == test.only_a and pairs.count("b-only") == test.only_b
    assert "<td>Level</td><td>Easy</td>" in html and "pts</td>" in html  # per-group deltas
    links = re.findall(r'<a href="(runs/[^"]+/tasks/task-0003\.html)"', html)
    assert len(links) == 2 and links[0] != links[1]
    assert all((report_ab / link).is_file() for link in links)
    assert (report_ab / "runs" / "1-run-a" / "index.html").is_file()
    # The task id opens both trajectories side by side.
    both = re.search(r'<td><a href="(pairs/2/task-0003\.html)">task-0003</a>', html)
    assert both is not None
    side = (report_ab / both.group(1)).read_text(encoding="utf-8")
    frames = re.findall(r'<iframe src="([^"]+)"', side)
    assert len(frames) == 2
    assert {(report_ab / "pairs" / "2" / f).resolve() for f in frames} == {
        (report_ab / link).resolve() for link in links
    }


def test_view_renders_one_trajectory_and_prints_its_path(run_a: Path, tmp_path: Path) -> None:
    file = RunDir(run_a).trajectory_file("task-0002")
    printed = cli("view", file, "--out", tmp_path / "view").strip()
    assert printed == str(tmp_path / "view" / "task-0002.html")
    html = Path(printed).read_text()
    assert "What colour is the object in clip 2?" in html and "<audio" in html
    assert (tmp_path / "view" / "assets" / "report.js").is_file()


def test_user_mistakes_are_one_line_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = {
        "report": ["report", str(tmp_path / "nope")],
        "no results": ["report", str(empty), "--out", str(tmp_path / "r")],
        "view": ["view", str(tmp_path / "x.jsonl")],
        "nothing": ["report"],
        "both": ["report", str(empty), "--serve", str(empty)],
        "serve a file": ["report", "--serve", str(tmp_path / "nope")],
    }
    for name, args in cases.items():
        result = runner.invoke(app, args)
        # OmnilabError: main() prints it as one "error: ..." line, without a traceback.
        assert isinstance(result.exception, OmnilabError), (name, result.exception)
        assert "\n" not in str(result.exception)
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", *cases["no results"]], capture_output=True, text=True
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error:") and "results.jsonl" in proc.stderr


def test_view_reads_schema_1_trajectories(tmp_path: Path) -> None:
    old = Path(__file__).resolve().parents[1] / "data" / "trajectory_v1.jsonl"
    html = Path(cli("view", old, "--out", tmp_path).strip()).read_text(encoding="utf-8")
    assert "<h2>Run events</h2>" in html  # no context ids in schema 1: one section
    assert html.count('class="msg assistant') == 3 and 'class="msg tool' in html
