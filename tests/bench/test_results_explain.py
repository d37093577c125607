"""Issue 44.2: a result says what was expected, what the scorer read and the rule that decided,
in ``results.jsonl`` and on the report's task page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.bench.scoring.contains import MAX_WORDS
from omnilab.cli.main import app
from omnilab.config import get_settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_S", "0")
    get_settings.cache_clear()


def test_a_wrong_verdict_names_the_label_and_the_rule(tmp_path: Path) -> None:
    data = tmp_path / "tasks.jsonl"
    data.write_text(
        json.dumps({"id": "w", "question": "Which word?", "answer": "sunflower"}) + "\n"
    )
    long_reply = "The word shown is a sunflower " + "and more words " * 10  # 36 words
    model = tmp_path / "m.json"
    model.write_text(json.dumps({"outputs": [long_reply], "repeat": True}))
    run = tmp_path / "run"
    args = ["eval", "jsonl", "--data", str(data), "--model", f"scripted:{model}"]
    args += ["--scorer", "answer_in_reply", "--out", str(run), "--no-progress"]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, (done.output, done.exception)
    (row,) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert row["labels"] == ["sunflower"]
    assert row["score"]["correct"] is False
    assert f"36 words; answer_in_reply reads at most {MAX_WORDS}" in row["score"]["reason"]
    report = tmp_path / "report"
    shown = runner.invoke(app, ["report", str(run), "--out", str(report)])
    assert shown.exit_code == 0, (shown.output, shown.exception)
    html = (report / "tasks" / "w.html").read_text(encoding="utf-8")
    assert "<th>expected</th><td>sunflower</td>" in html
    assert "<th>rule</th><td>wrong: the reply has 36 words" in html
    assert "<th>extracted</th>" in html
