"""Acceptance of the scoring rules: a scripted OmniAgent run (the real ``tir`` agent, a generated
video) whose per-task answers "B", "[[1.4, 40]]", "from 0:00 to 5:31.9", "10.3 m" and "ten"
are each scored as a person would score them (docs/evaluation.md, "Reading answers")."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import evaluate, new_config

ANSWERS = ["B", "[[1.4, 40]]", "from 0:00 to 5:31.9", "10.3 m", "ten"]


def test_scripted_omniagent_run_scores_as_a_person_would(
    tmp_path: Path, video: Path, bench_data: Path
) -> None:
    data = tmp_path / "eval.jsonl"
    shutil.copy(bench_data / "omniagent_eval.jsonl", data)
    media = tmp_path / "media"
    for line in data.read_text(encoding="utf-8").splitlines():
        # Each item's video at its own path (UUID-like names with digits included).
        target = media / json.loads(line)["video"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(video, target)
    script = tmp_path / "agent.json"
    script.write_text(json.dumps([f"<answer>{a}</answer>" for a in ANSWERS]), encoding="utf-8")
    config = new_config(
        "omniagent", data, agent="tir", model=f"scripted:{script}", media_root=media
    )
    run = tmp_path / "run"
    # A str run folder is accepted as well as a Path.
    outcome = asyncio.run(evaluate(config, str(run), concurrency=1))
    # Items without an id are named by their line number.
    results = sorted(RunDir(str(run)).results(), key=lambda r: int(r.task_id))
    assert [(r.task_id, r.error) for r in results] == [(str(i), None) for i in range(1, 6)]
    scores = [r.score for r in results]
    assert all(s is not None for s in scores)
    got = [(s.scorer, s.extracted, s.value, s.correct) for s in scores if s is not None]
    # MCQ, gold B: the letter.
    assert got[0] == ("mcq", "B", 1.0, True)
    # TR, gold [[1.4, 40.066]]: IoU 38.6 / 38.666.
    assert got[1][:2] == ("temporal_iou", "[[1.4, 40.0]]")
    assert got[1][2] == pytest.approx(38.6 / 38.666) and got[1][3] is True
    # TR, gold [[0, 331.875]]: 5:31.9 is 331.9 s.
    assert got[2][:2] == ("temporal_iou", "[[0.0, 331.9]]")
    assert got[2][2] == pytest.approx(331.875 / 331.9) and got[2][3] is True
    # SIZE, gold 9.8 (in meters): relative error 0.051 passes 9 of 10 MRA thresholds.
    assert got[3] == ("mra", "10.3", pytest.approx(0.9), True)
    # SIZE (a count), gold 10: "ten" is 10.
    assert got[4] == ("mra", "10", 1.0, True)
    figures = {f.name: f.value for f in outcome.summary.figures}
    assert figures == {
        "MCQ accuracy": 1.0,
        "mean IoU (TR)": pytest.approx((38.6 / 38.666 + 331.875 / 331.9) / 2),
        "mean MRA (SIZE)": pytest.approx(0.95),
    }
