"""The ``master`` agent with the embedded ``local:smollm2`` in every role: each stage's schema
becomes a grammar, and the run completes (whatever a 135M model answers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_master_kit import run_master

from omnilab.models import get_model
from omnilab.models.providers.local_files import smollm2_path
from omnilab.models.types import GenerateConfig

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(smollm2_path() is None, reason="the [local] extra is not installed"),
]


def test_smollm2_in_every_role_completes(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("The train leaves at 9:40 from platform 3.", encoding="utf-8")
    roles = {r: get_model("local:smollm2") for r in ("text", "master")}
    run = run_master(
        tmp_path,
        get_model("local:smollm2"),
        [notes],
        "When does the train leave?",
        roles=roles,
        max_rounds=1,
        generate=GenerateConfig(max_tokens=48, temperature=0.0),
    )
    traj = run.trajectory
    assert traj.run_end is not None and traj.status in ("answered", "no_answer")
    assert run.stats["rounds"] == 1
    calls = traj.model_calls
    assert {c.role for c in calls} == {"text", "master"} and all(c.error is None for c in calls)
    # Every call asked for its stage's schema; perception, reasoning, execution and decision ran.
    assert [n.label for n in run.notes] == ["perception", "reasoning", "answers", "decision"]
