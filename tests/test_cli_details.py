"""Small things a new user meets: the leaderboard names the offline suite, ``config`` says
where each setting comes from, counts read "1 step", and a mistyped JSON option names the
column."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.agents.ota.options import OtaOptions
from omnilab.agents.ota.prompts import notice
from omnilab.bench.offline_suite import ADAPTER
from omnilab.cli._pairs import parse_pairs
from omnilab.cli.main import app
from omnilab.errors import OmnilabError
from omnilab.plural import plural

runner = CliRunner()


def test_plural() -> None:
    assert [plural(n, "step") for n in (0, 1, 2)] == ["0 steps", "1 step", "2 steps"]
    assert (
        plural(1, "query", "queries") == "1 query" and plural(3, "query", "queries") == "3 queries"
    )
    assert notice(2, 3, OtaOptions()) == "[NOTICE] Step 2/3. 1 step remaining."
    shown = runner.invoke(app, ["protocols"], terminal_width=300)
    assert shown.exit_code == 0 and "1 settings" not in shown.output


def test_one_turn_is_one_turn(video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["<answer>4</answer>"]))
    out = tmp_path / "run"
    asked = runner.invoke(
        app, ["ask", str(video), "Q?", "--model", f"scripted:{script}", "--out", str(out)]
    )
    assert asked.exit_code == 0 and "answered: 1 turn," in asked.output
    traced = runner.invoke(app, ["trace", str(out / "trajectory.jsonl")], terminal_width=200)
    assert "end: answered, 1 turn," in traced.output


def test_malformed_json_option_names_the_column() -> None:
    with pytest.raises(OmnilabError) as err:
        parse_pairs(['generate={"top_logprobs": 5'], "--agent-option", parse_json=True)
    message = str(err.value)
    assert "not valid JSON at column 19" in message and "\n" not in message
    assert parse_pairs(["mode=omniatlas"], "-O", parse_json=True) == {"mode": "omniatlas"}
    assert parse_pairs(['g={"a": 1}'], "-O", parse_json=True) == {"g": {"a": 1}}


def test_malformed_json_option_on_the_command_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "omnilab",
            "ask",
            "x.mp4",
            "Q?",
            "-O",
            'generate={"top_logprobs": 5',
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1 and "not valid JSON at column 19" in proc.stderr
    assert "valid dictionary" not in proc.stderr


def test_config_shows_where_each_setting_comes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml = tmp_path / "omnilab.toml"
    toml.write_text('[agents]\nmax_turns = 7\n[models.capabilities]\n"vllm:x" = {image = true}\n')
    monkeypatch.setenv("OMNILAB_CONFIG", str(toml))
    monkeypatch.setenv("OMNILAB_MODELS__TIMEOUT_S", "33")
    shown = runner.invoke(app, ["config"], terminal_width=400)
    assert shown.exit_code == 0, shown.output
    rows = {line.split()[0]: line.split() for line in shown.output.splitlines() if line.strip()}
    assert rows["setting"][:4] == ["setting", "value", "source", "env"]
    assert rows["agents.max_turns"][1:3] == ["7", "file"]
    assert rows["models.timeout_s"][1:3] == ["33.0", "env"]
    assert rows["models.capabilities"][-2] == "file" or "file" in rows["models.capabilities"]
    assert rows["agents.runs_dir"][2] == "default"


def test_offline_suite_runs_are_labelled_offline_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the leaderboard writes its tables here
    data = tmp_path / "offline_suite.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "2+2?", "answer": "4"}) + "\n")
    loaded = ADAPTER.load(data)
    assert loaded.dataset == "offline-suite"
    assert {t.dataset for t in loaded.tasks} == {"offline-suite"}
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"outputs": ["<answer>4</answer>"], "repeat": True}))
    run = tmp_path / "run"
    ran = runner.invoke(
        app,
        [
            "eval",
            "offline-suite",
            "--data",
            str(data),
            "--model",
            f"scripted:{model}",
            "--out",
            str(run),
        ],
    )
    assert ran.exit_code == 0, ran.output
    board = runner.invoke(app, ["leaderboard", str(run)], terminal_width=300)
    assert board.exit_code == 0, board.output
    assert "offline-suite" in board.output and "jsonl" not in board.output


def test_help_shows_no_type_after_flags(tmp_path: Path) -> None:
    """Issue 44.22: typer wrote ``<bool>`` after every flag (``--check <bool>``)."""
    import os

    env = {**os.environ, "COLUMNS": "160"}
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "export", "rl", "--help"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "--check" in proc.stdout and "<bool>" not in proc.stdout
    assert "<path>" in proc.stdout  # options that take a value keep their type


@pytest.mark.parametrize(
    ("typed", "offered"),
    [("--bogus", None), ("--outt", "--out"), ("--limt", "--limit")],
)
def test_an_unknown_option_suggests_only_options_spelled_like_it(
    tmp_path: Path, typed: str, offered: str | None
) -> None:
    """Issue 44.22: ``--bogus`` offered ``--out`` (the shared dashes alone passed difflib's cutoff)."""
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "eval", "offline-suite", typed],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"No such option: {typed}" in proc.stderr
    if offered is None:
        assert "Possible options" not in proc.stderr
    else:
        assert f"Possible options: {offered}" in proc.stderr
