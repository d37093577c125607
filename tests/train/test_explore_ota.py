"""Tree exploration and OmniDPO with another scaffold, unchanged: OmniAgent's ``ota`` loop (JSON
actions sent back as user messages, media purged from older turns by context edits)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from explore_kit import scripted, verdicts

from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import Components, evaluate, new_config
from omnilab.media import synth
from omnilab.models.providers import scripted as s
from omnilab.models.providers.scripted import OutputStep
from omnilab.models.types import ModelOutput
from omnilab.train.dpo import dpo_pairs
from omnilab.train.dpo_rows import trl_message
from omnilab.train.explore import ExploreOptions
from omnilab.train.explore_replay import agent_calls
from omnilab.train.explore_run import explore, explore_config
from omnilab.trajectory import ContextEdit, read_trajectory

pytestmark = pytest.mark.slow  # a video is made and cut into frames


def _turn(action: dict[str, Any], confidence: float = 0.3) -> OutputStep:
    reply = {"observation": "seen", "think": "t", "confidence": confidence, "action": action}
    return s.text(json.dumps(reply))


def _frames(start: float, end: float) -> dict[str, Any]:
    return {"type": "get_frames", "start": start, "end": end, "num": 2}


def _answer(letter: str) -> OutputStep:
    return _turn({"type": "answer", "content": letter}, confidence=0.95)


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    synth.make_video(tmp_path / "v.mp4", duration=12.0, fps=5, size=(160, 120))
    row = {
        "id": "v1",
        "video": "v.mp4",
        "question_type": "MCQ",
        "question": "Which colour is the square?",
        "options": ["A. red", "B. green"],
        "answer": "B",
    }
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def test_explore_an_ota_run(tmp_path: Path, data: Path) -> None:
    agent, agent_adapter = scripted(
        [_turn(_frames(0, 5)), _turn(_frames(6, 11)), _answer("A"), _answer("B")], "a"
    )
    verifier, _ = scripted(
        [verdicts((True, 0.8), (False, 0.2)), verdicts((False, 0.0), (True, 1.0))], "v"
    )
    config = explore_config(
        "omniagent",
        data,
        agent="ota",
        model="scripted:a",
        verifier="scripted:v",
        options=ExploreOptions(branches=2, parallel=False),
        media_root=tmp_path,
    )
    run = tmp_path / "run"
    asyncio.run(
        explore(config, run, components=Components(model=agent, roles={"verifier": verifier}))
    )
    assert agent_adapter.remaining == 0
    main = read_trajectory(RunDir(run).trajectory_file("v1", 0))
    assert main.answer == "B" and RunDir(run).results()[0].judged is True
    leaf = read_trajectory(run / "branches" / "v1" / "r.0.1.jsonl")
    # The replayed first turn's frames were purged by the scaffold's own memory edit.
    assert any(isinstance(e, ContextEdit) for e in leaf.events)
    assert leaf.run_start is not None and leaf.run_start.parent_run_id is not None


def test_dpo_pair_of_an_ota_run_keeps_the_purged_context(tmp_path: Path, data: Path) -> None:
    agent, _ = scripted([_turn(_frames(0, 5)), _answer("A")], "a")
    config = new_config("omniagent", data, agent="ota", model="scripted:a", media_root=tmp_path)
    run = tmp_path / "run"
    asyncio.run(evaluate(config, run, components=Components(model=agent)))
    assert RunDir(run).results()[0].judged is False
    judgment = {
        "first_error_step": 2,
        "category": "Visual Perception Error",
        "explanation": "e",
        "correction": "c",
    }
    judge, _ = scripted([OutputStep(output=ModelOutput.from_text(json.dumps(judgment)))], "j")
    fixer, fixer_adapter = scripted([_answer("B")], "f")
    export = asyncio.run(dpo_pairs([run], judge=judge, model=fixer, reruns=tmp_path / "re"))
    assert export.log[0].pair, export.log[0].reason
    assert len(fixer_adapter.requests) == 1
    original = agent_calls(read_trajectory(RunDir(run).trajectory_file("v1", 0)))[1]
    assert original.sent is not None
    row = export.rows[0]
    assert row["prompt"] == [trl_message(m, []) for m in original.sent.messages]
    assert json.loads(row["chosen"][0]["content"])["action"]["content"] == "B"
    assert json.loads(row["rejected"][0]["content"])["action"]["content"] == "A"
