"""The ``omniagent-paper`` preset: the authors' released environment (``video_env.py``) and batch
evaluator (``demo/omniagent_eval.py``) on the wire: sampling 1.0 / 0.95 / top-k 20 / 4096 tokens,
the turn limit ``min(5 + int(duration / max_clip_len), 32)``, the release's texts, EARLY_ANSWER at
step 1, and answers accepted whatever their confidence (the release has no threshold)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.agents import get_agent
from omnilab.agents.ota import OtaOptions, turn_limit
from omnilab.bench.protocols import get_protocol
from omnilab.cli.main import app
from omnilab.media import synth
from omnilab.models.fake_server import FakeOpenAIServer, reply_text

runner = CliRunner()


def _turn(action: dict[str, Any], confidence: float) -> str:
    return json.dumps(
        {"observation": "seen", "think": "t", "confidence": confidence, "action": action}
    )


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("omniagent")
    return synth.make_video(folder / "v.mp4", duration=8.0, fps=5, size=(160, 120))


def _data(folder: Path, clip: Path) -> Path:
    item = {
        "id": "q1", "video": str(clip), "question_type": "MCQ", "question": "What is shown?",
        "options": ["A. a cat", "B. a counter"], "answer": "B",
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "eval.jsonl"
    path.write_text(json.dumps(item) + "\n", encoding="utf-8")
    return path


def _eval(folder: Path, clip: Path, *extra: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run one MCQ item whose every reply answers "B" at confidence 0.5; the requests and the
    result."""
    out = folder / "run"
    with FakeOpenAIServer(
        default=reply_text(_turn({"type": "answer", "content": "B"}, 0.5))
    ) as fake:
        result = runner.invoke(
            app,
            [
                "eval", "omniagent", "--data", str(_data(folder, clip)), "--agent", "ota",
                "--media-root", str(clip.parent),
                "--model", f"vllm:agent@{fake.base_url}", "--out", str(out), "--no-cache",
                "--no-progress", *extra,
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        bodies = [fake.body(i) for i in range(len(fake.chat_requests))]
    (row,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return bodies, row


def test_the_preset_loads_and_its_options_reach_the_agent() -> None:
    preset = get_protocol("omniagent-paper")
    assert "HarryHsing/OmniAgent" in preset.source and preset.agent == "ota" and preset.gaps
    agent = get_agent("ota", **preset.agent_options)
    options = agent.options  # type: ignore[attr-defined]
    assert (options.seconds_per_step, options.step_rounding) == ("clip", "floor")
    assert options.rules == "release" and options.refuse_early_answer is True
    assert options.confidence_threshold is None and options.require_confidence is False
    assert preset.budgets.max_turns >= 52  # K limits
    assert preset.scorer == "omniagent-release"
    assert all(gap.reason for gap in preset.gaps)  # every remaining gap says why


def test_the_turn_limit_follows_the_readme_formula() -> None:
    preset = OtaOptions.model_validate(get_protocol("omniagent-paper").agent_options)
    for duration in (0, 59.9, 60, 301, 1799, 3600):
        assert turn_limit(preset, duration, 50) == min(5 + int(duration / 60), 32)
    # omnilab's default rounds up: a started block earns its turn
    assert turn_limit(OtaOptions(seconds_per_step=60), 301, 50) == 11
    assert turn_limit(OtaOptions(seconds_per_step=60, step_rounding="floor"), 301, 50) == 10


def test_sampling_turn_limit_and_confidence_on_the_wire(tmp_path: Path, clip: Path) -> None:
    bodies, row = _eval(tmp_path / "preset", clip, "--protocol", "omniagent-paper")
    # EARLY_ANSWER refuses step 1; then the answer counts, whatever its confidence
    assert len(bodies) == 2 and row["score"]["correct"] is True
    assert row["score"]["scorer"] == "omniagent-release"
    assert row["score"]["details"]["reference"] == 1.0 and row["score"]["details"]["strict"] == 1.0
    sent = json.dumps(bodies[1]["messages"], ensure_ascii=False)
    assert "Video META:\\n- duration_seconds: 8.00" in sent
    assert "[ERROR] EARLY_ANSWER: Must gather evidence before answering" in sent
    (system,) = bodies[0]["messages"][0]["content"]  # video_env.py: a list of one text part
    assert system["text"].startswith("\nYou are the **Deep-Omni-Research")
    body = bodies[0]
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["top_k"]) == (
        1.0,
        0.95,
        4096,
        20,
    )
    # the opt-in gate: refused until the final step, which comes at 5 + int(8 / 60) = 5 turns
    gated, _ = _eval(
        tmp_path / "gated", clip, "--protocol", "omniagent-paper", "-O", "confidence_threshold=0.9"
    )
    assert len(gated) == 5
    # omnilab's defaults: no gate, no EARLY_ANSWER, provider's sampling
    default, row = _eval(tmp_path / "default", clip)
    assert len(default) == 1 and row["score"]["correct"] is True
    assert "temperature" not in default[0] and "top_k" not in default[0]
