"""Omni-DeepSearch evaluation: the generated offline sample, ``omnilab eval omni-deepsearch
--agent deepsearch`` with three judges (majority vote, each verdict kept), breakdowns by
retrieval modality and audio type, searches per tool and budget exhaustion; ``omnilab ask``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from agentkit import scripted
from typer.testing import CliRunner

from omnilab.bench.datasets import load_dataset
from omnilab.bench.scoring import MajorityVote
from omnilab.bench.search_stats import run_search_stats
from omnilab.cli.main import app
from omnilab.models.providers.scripted import text
from omnilab.tools.mediasearch.sample import make_sample

ROOT = Path(__file__).resolve().parents[2]
SPEECH = ROOT / "tests" / "data" / "speech" / "two_cities_part1.wav"
runner = CliRunner()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample")
    make_sample(out, speech=SPEECH, digest=False)
    return out


def script(path: Path, data: object) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return f"scripted:{path}"


def search_step(tool: str, query: str) -> dict[str, object]:
    return {"tool_call": {"name": tool, "arguments": {"query_list": [query]}}}


def test_the_sample_loads_with_every_modality_and_audio_type(sample: Path) -> None:
    loaded = load_dataset("omni-deepsearch", sample / "tasks.jsonl")
    assert not loaded.skipped and not loaded.missing_media
    modalities = {t.metadata.attributes["retrieval_modality"] for t in loaded.tasks}
    kinds = {t.metadata.attributes.get("audio_type") for t in loaded.tasks}
    assert modalities == {"single", "multi", "image", "video"}
    assert kinds == {"speech", "music", "animal", "ambient", None}
    multi = next(t for t in loaded.tasks if t.metadata.attributes["retrieval_modality"] == "multi")
    assert len(multi.files) == 2


def test_the_sample_answers_are_findable_offline(sample: Path) -> None:
    from omnilab.tools.mediasearch import MediaSearch

    searcher = MediaSearch("local", index_dir=sample / "index")
    web, _ = asyncio.run(searcher.search("Charles Dickens born", "web"))
    assert "Portsmouth" in web[0].snippet
    images, _ = asyncio.run(searcher.search("Port Ardent crest", "image"))
    assert "golden key" in images[0].snippet
    videos, _ = asyncio.run(searcher.search("Cape Lumen lighthouse tour", "video"))
    assert videos[0].kind == "video" and videos[0].thumbnail is not None


def test_majority_vote_of_three_disagreeing_judges_keeps_each_verdict(sample: Path) -> None:
    task = load_dataset("omni-deepsearch", sample / "tasks.jsonl").tasks[0]
    verdicts = {"a": "Correct", "b": "Incorrect", "c": "Correct"}
    judges = [scripted([text(v)], name=f"scripted:{n}")[0] for n, v in verdicts.items()]
    score = asyncio.run(MajorityVote(judges).score(task, "<answer>Portsmouth</answer>"))
    assert score.correct is True
    assert [(j.judge, j.verdict) for j in score.judges] == [
        ("scripted:a", "correct"),
        ("scripted:b", "incorrect"),
        ("scripted:c", "correct"),
    ]
    judges = [
        scripted([text(v)], name=f"scripted:{v}{i}")[0]
        for i, v in enumerate(("Incorrect", "Incorrect", "Correct"))
    ]
    assert asyncio.run(MajorityVote(judges).score(task, "<answer>Leeds</answer>")).correct is False


def test_eval_runs_end_to_end_with_three_judges(sample: Path, tmp_path: Path) -> None:
    # Each task: one text search, one image search, then an answer (the script repeats).
    model = script(
        tmp_path / "agent.json",
        {
            "outputs": [
                search_step("text_search", "Charles Dickens born"),
                search_step("text_search", "Port Ardent orchestra"),
                {"text": "<answer>Portsmouth</answer>"},
            ],
            "repeat": True,
        },
    )
    judges = [
        script(tmp_path / "j1.json", {"outputs": ["Correct"], "repeat": True}),
        script(tmp_path / "j2.json", {"outputs": ["Incorrect"], "repeat": True}),
        script(tmp_path / "j3.json", {"outputs": ["Correct", "Incorrect"], "repeat": True}),
    ]
    out = tmp_path / "run"
    args = [
        "eval", "omni-deepsearch", "--data", str(sample / "tasks.jsonl"), "--agent", "deepsearch",
        "-O", f"index_dir={sample / 'index'}", "-O", "budget=[1, 3]", "-O", "budget_scope=tool",
        "--model", model,
        "--judge", judges[0], "--judge", judges[1], "--judge", judges[2],
        "--concurrency", "1", "--out", str(out), "--no-progress",
    ]  # fmt: skip
    done = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert done.exit_code == 0, (done.output, done.exception)
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 5
    for result in results:
        judged = result["score"]["judges"]
        assert [j["verdict"] for j in judged][:2] == ["correct", "incorrect"]  # kept, each
        assert result["judged"] == (judged[2]["verdict"] == "correct")
    assert {r["judged"] for r in results} == {True, False}
    # Searches per tool and exhaustion: the second text search of each task hits budget 1.
    stats = run_search_stats(out)
    assert stats is not None and stats.tasks == 5
    assert stats.by_tool["text_search"].total == 5 and stats.by_tool["text_search"].limit == 1
    assert stats.exhaustion_rate == 1.0 and stats.refused_calls == 5
    assert set(stats.exhaustion_by["retrieval_modality"]) == {"single", "multi", "image", "video"}
    assert "Searches (5 tasks; budget exhausted in 5, 100.0%; 5 calls refused)" in done.output
    summary = json.loads((out / "metrics.json").read_text())
    assert set(summary["groups"]["retrieval_modality"]) == {"single", "multi", "image", "video"}
    assert set(summary["groups"]["audio_type"]) >= {"speech", "music", "animal", "ambient"}
    metrics = runner.invoke(app, ["metrics", str(out)], env={"COLUMNS": "200"})
    assert metrics.exit_code == 0 and "text_search" in metrics.output
    again = runner.invoke(app, ["eval", "--out", str(out), "--resume", "--no-progress"])
    assert again.exit_code == 0 and "0 tasks run now, 5 were done before" in again.output


def test_ask_shows_each_search_and_the_budget_left(sample: Path, tmp_path: Path) -> None:
    model = script(
        tmp_path / "ask.json",
        [
            search_step("image_search_by_text_query", "Port Ardent crest"),
            {"text": "<answer>a golden key</answer>"},
        ],
    )
    done = runner.invoke(
        app,
        [
            "ask",
            str(sample / "audio" / "cuckoo_call.wav"),
            "What does the bird hold?",
            "--agent",
            "deepsearch",
            "-O",
            f"index_dir={sample / 'index'}",
            "--model",
            model,
            "--out",
            str(tmp_path / "ask"),
        ],
        env={"COLUMNS": "200"},
    )
    assert done.exit_code == 0, (done.output, done.exception)
    assert "agent deepsearch" in done.output  # the header names the agent that runs
    assert "Port Ardent crest" in done.output
    assert "image_search_by_text_query 9/10" in done.output
    assert "a golden key" in done.output


@pytest.mark.slow
def test_eval_without_data_runs_the_cached_sample_on_its_indexes(tmp_path: Path) -> None:
    model = script(
        tmp_path / "agent.json",
        {
            "outputs": [
                search_step("image_search_by_text_query", "Port Ardent crest"),
                {"text": "<answer>golden key</answer>"},
            ],
            "repeat": True,
        },
    )
    out = tmp_path / "run"
    args = [
        "eval", "omni-deepsearch", "--agent", "deepsearch", "--model", model,
        "--scorer", "answer_set", "--concurrency", "1", "--out", str(out), "--no-progress",
    ]  # fmt: skip
    done = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert done.exit_code == 0, (done.output, done.exception)
    results = {
        r["task_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())
    }
    assert set(results) == {"ds-music-image", "ds-animal-image", "ds-ambient-video"}
    assert results["ds-animal-image"]["judged"] is True  # found in the sample's image index
    assert results["ds-music-image"]["judged"] is False
