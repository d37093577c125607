"""Issue 44.3 and 44.6: a task an agent cannot take is that task's failure (kind ``input``),
listed under the summary, and the run goes on; a run whose answers have nothing to extract
says how to score the replies themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.config import get_settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_S", "0")
    get_settings.cache_clear()


def _eval(tmp_path: Path, rows: list[dict[str, object]], outputs: list[object], *extra: str):
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = tmp_path / "m.json"
    model.write_text(json.dumps({"outputs": outputs, "repeat": True}))
    run = tmp_path / "run"
    args = ["eval", "jsonl", "--data", str(data), "--model", f"scripted:{model}"]
    result = runner.invoke(app, [*args, "--out", str(run), "--no-progress", *extra])
    lines = (run / "results.jsonl").read_text().splitlines() if run.is_dir() else []
    return result, {(r := json.loads(line))["task_id"]: r for line in lines}


def test_a_task_the_agent_cannot_take_fails_alone(
    tmp_path: Path, image_file: Path, video: Path
) -> None:
    rows = [
        {"id": "vid-1", "question": "What happens?", "answer": "x", "video": video.name},
        {"id": "img-word", "question": "Which word?", "answer": "y", "image": image_file.name},
        {"id": "vid-2", "question": "What sound?", "answer": "z", "video": video.name},
    ]
    assert video.parent == image_file.parent  # paths from data lie beneath the media root
    extra = ["--agent", "ota", "--max-turns", "1", "--media-root", str(video.parent)]
    done, results = _eval(tmp_path, rows, ["not a turn"], *extra)
    assert "stopped at task" not in done.output, done.output
    assert set(results) == {"vid-1", "img-word", "vid-2"}
    assert results["img-word"]["error_kind"] == "input"
    assert "ota needs a video (or audio) input" in results["img-word"]["error"]
    assert all(results[t]["error_kind"] != "input" for t in ("vid-1", "vid-2"))
    assert "failed (input): 1 task, img-word: unsuitable input: ota needs a video" in done.output


def test_untagged_answers_point_to_answer_in_reply(tmp_path: Path) -> None:
    rows = [{"id": f"t{i}", "question": "2+2?", "answer": "4"} for i in range(3)]
    done, results = _eval(tmp_path, rows, ["It is 4."], "--scorer", "answer_set")
    assert all(r["score"]["correct"] is False for r in results.values())
    flat = " ".join(done.output.split())
    assert "3 of 3 answers have no <answer> span" in flat
    assert f"omnilab score {tmp_path / 'run'} --scorer answer_in_reply" in flat


def test_tagged_answers_get_no_hint(tmp_path: Path) -> None:
    rows = [{"id": "t0", "question": "2+2?", "answer": "4"}]
    done, _ = _eval(tmp_path, rows, ["<answer>5</answer>"], "--scorer", "answer_set")
    assert "no <answer> span" not in done.output


def test_an_input_error_is_no_setup_error() -> None:
    from omnilab.agents.base import AgentConfigError, TaskInputError
    from omnilab.bench.executor import is_setup_error

    assert not is_setup_error(TaskInputError("ota needs a video"))
    assert is_setup_error(AgentConfigError("bad ota option"))
