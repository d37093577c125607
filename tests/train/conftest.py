"""Run folders for the export tests, made by ``omnilab eval`` with scripted models on media
generated here: a ``tir`` run that calls ``read_image`` (one task right, two wrong) and an
``ota`` run whose contexts are purged between turns (one bad reply, then an answer)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from trainkit import cli, ota_turn

from omnilab.config import get_settings
from omnilab.media import synth


@pytest.fixture(autouse=True)
def _offline_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--check`` may load files with Hugging Face ``datasets``: its cache stays in the test's
    folder and it never asks the Hub."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_S", "0")
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def clip8(media_dir: Path) -> Path:
    """8 s, 5 fps video with sound."""
    return synth.make_video(media_dir / "export8.mp4", duration=8.0, fps=5, size=(160, 120))


@pytest.fixture()
def tir_run(tmp_path: Path, image_file: Path) -> Path:
    """Tasks q0 (answer red), q1 and q2 (answer blue); the agent reads the image, then says
    blue with a reasoning: q0 is wrong, q1 and q2 right. Two model calls per task."""
    items = [
        {
            "id": f"q{i}",
            "question": f"What colour is thing {i}?",
            "answer": "red" if i == 0 else "blue",
            "Level": "Easy",
            "category": "Art",
            "omni_modal_input": [{"type": "image", "id": "image_1", "path": str(image_file)}],
        }
        for i in range(3)
    ]
    data = tmp_path / "tasks.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    steps: list[object] = []
    for _ in items:
        steps.append({"tool_call": {"name": "read_image", "arguments": {"image_ids": ["image_1"]}}})
        steps.append({"text": "<answer>blue</answer>", "reasoning": "It looks blue."})
    script = tmp_path / "tir.json"
    script.write_text(json.dumps(steps), encoding="utf-8")
    out = tmp_path / "tir-run"
    cli(
        "eval", "omnigaia", "--data", data, "--agent", "tir", "--model", f"scripted:{script}",
        "--scorer", "answer_set", "--tools", "read_image", "--out", out,
        "--concurrency", "1", "--no-cache", "--no-progress", "--media-root", image_file.parent,
    )  # fmt: skip
    return out


@pytest.fixture()
def ota_data(tmp_path: Path, clip8: Path) -> Path:
    """An OmniAgent evaluation file: an MCQ (answer B) and a TR task on one video."""
    root = tmp_path / "media"
    (root / "videos" / "Src").mkdir(parents=True)
    shutil.copy(clip8, root / "videos" / "Src" / "v.mp4")
    items = [
        {"id": "mcq", "video": "videos/Src/v.mp4", "question_type": "MCQ_Holmes",
         "question": "What is shown?", "options": ["A. a cat", "B. a counter"], "answer": "B"},
        {"id": "tr", "video": "videos/Src/v.mp4", "question_type": "TR",
         "question": "When does the tone rise?", "options": [], "answer": "[[2.0, 6.0]]"},
    ]  # fmt: skip
    data = tmp_path / "eval.jsonl"
    data.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    return data


@pytest.fixture()
def ota_run(tmp_path: Path, ota_data: Path) -> Path:
    """mcq: frames, audio, answer B (three calls, the context purged after each media turn);
    tr: a reply that is not JSON (an invalid action), then an answer (two calls)."""
    steps = [
        ota_turn({"type": "get_frames", "start": 0, "end": 8, "num": 2}),
        ota_turn({"type": "get_audio", "start": 0, "end": 4}),
        ota_turn({"type": "answer", "content": "B"}, 0.95),
        "not json",
        ota_turn({"type": "answer", "content": "[[3.0, 6.0]]"}, 0.95),
    ]
    script = tmp_path / "ota.json"
    script.write_text(json.dumps(steps), encoding="utf-8")
    out = tmp_path / "ota-run"
    cli(
        "eval", "omniagent", "--data", ota_data, "--media-root", tmp_path / "media",
        "--agent", "ota", "--model", f"scripted:{script}", "--out", out,
        "--concurrency", "1", "--no-cache", "--no-progress",
    )  # fmt: skip
    return out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``train`` (a real trainer on the CPU) run only when ``-m`` names them:
    ``pytest -m train``. The default run, and CI's, skips them."""
    if "train" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="feeds a real trainer: run with pytest -m train")
    for item in items:
        if item.get_closest_marker("train") is not None:
            item.add_marker(skip)
