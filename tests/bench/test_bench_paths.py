"""The Python API takes a run folder as ``str`` or ``Path`` everywhere (a ``str`` used to give a
traceback)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import omnilab
from omnilab.bench import Score, TaskMetadata, TaskResult, write_results
from omnilab.bench.leaderboard import build_leaderboard
from omnilab.bench.reports import open_source, source_metrics
from omnilab.bench.rescore import rescore_run
from omnilab.bench.results import read_results
from omnilab.bench.run_dir import RunConfig, RunDir, load_results
from omnilab.models.providers.scripted import scripted_model, text


def test_ask_takes_a_str_run_folder(image_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ask-run"
    model = scripted_model([text("<answer>4</answer>")])
    result = omnilab.ask([image_file], "How much is 2 + 2?", model=model, run_dir=str(folder))
    assert result.answer == "4"
    assert result.trajectory_path == folder / "trajectory.jsonl"


def test_reading_and_rescoring_take_str_run_folders(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    run = RunDir(str(folder))
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "q1", "question": "2 + 2?", "answer": "4"}\n', encoding="utf-8")
    run.write_config(
        RunConfig(dataset="jsonl", data=data, agent="tir", model="scripted:x", scorer="answer_set")
    )
    write_results(
        str(run.results_file),
        [
            TaskResult(
                task_id="q1",
                dataset="jsonl",
                prediction="<answer>4</answer>",
                score=Score(scorer="answer_set", value=1.0, correct=True),
                metadata=TaskMetadata(),
            )
        ],
    )
    assert run.path == folder and run.is_run()
    assert [r.task_id for r in load_results(str(run.results_file))] == ["q1"]
    assert [r.task_id for r in read_results(str(run.results_file))] == ["q1"]
    source = open_source(str(folder))
    assert source_metrics(source).pass_at_1.value == 1.0
    outcome = asyncio.run(
        rescore_run(str(folder), scorer_name="numeric", judges=[], name="numeric")
    )
    assert outcome.summary.pass_at_1.value == 1.0
    assert build_leaderboard([str(folder)], resamples=100).rows[0].label == "scripted:x"
