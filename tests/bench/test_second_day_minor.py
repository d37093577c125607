"""Issue 44's minor points in the bench layer: hints that only name what exists, and skipped
dataset items explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.bench.header import run_header
from omnilab.cli.main import app
from omnilab.models import get_model


@pytest.mark.parametrize("agent", ["coder", "ota", "tir"])
def test_the_capability_warning_suggests_mode_only_for_tir(agent: str) -> None:
    """Issue 44.8: ``--agent-option mode=...`` exists for tir only."""
    model = get_model("vllm:unknown-model@http://127.0.0.1:9/v1")
    header = run_header(agent=agent, model=model)
    (warning,) = [n for n in header.warnings if "no known capability flags" in n]
    assert ("--agent-option mode=" in warning) is (agent == "tir")


def test_every_item_skipped_says_why_not_filters(tmp_path: Path) -> None:
    """Issue 44.5: no filter was given; the error counts the skipped items and their reason."""
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": f"t{i}", "answer": "x"}) + "\n" for i in range(3)))
    result = CliRunner().invoke(
        app, ["eval", "jsonl", "--data", str(data), "--model", "scripted:none"]
    )
    message = str(result.exception)
    assert result.exit_code != 0 and "filters" not in message, message
    assert "all 3 items skipped" in message and "omnilab data check jsonl" in message
