"""``omnilab leaderboard``: models x benchmark groups with intervals, as Markdown, CSV, LaTeX."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.bench import Score, TaskMetadata, TaskResult, write_results
from omnilab.bench.leaderboard import build_leaderboard, to_csv, to_latex, to_markdown
from omnilab.bench.run_dir import RunConfig, RunDir
from omnilab.cli.main import app


def gaia(task_id: str, level: str, correct: bool) -> TaskResult:
    return TaskResult(
        task_id=task_id,
        dataset="omnigaia",
        score=Score(scorer="omnigaia", value=float(correct), correct=correct),
        metadata=TaskMetadata(level=level, category="Art"),
    )


def agent_task(task_id: str, qtype: str, value: float) -> TaskResult:
    return TaskResult(
        task_id=task_id,
        dataset="omniagent",
        score=Score(scorer=qtype.lower(), value=value, correct=value >= 0.5),
        metadata=TaskMetadata(task_type=qtype, attributes={"question_type": qtype}),
    )


def make_run(
    folder: Path, model: str, dataset: str, results: list[TaskResult], agent: str = "tir"
) -> Path:
    run = RunDir(folder)
    run.write_config(
        RunConfig(
            dataset=dataset, data=folder / "data.json", agent=agent, model=model, scorer=dataset
        )
    )
    write_results(run.results_file, results)
    return folder


@pytest.fixture()
def runs(tmp_path: Path) -> list[Path]:
    levels = ["Easy", "Easy", "Medium", "Hard"]
    return [
        make_run(
            tmp_path / "a-gaia",
            "openai:model-a@http://127.0.0.1:8000/v1",
            "omnigaia",
            [gaia(f"g{i}", lv, i != 3) for i, lv in enumerate(levels)],  # 3 of 4, Hard wrong
        ),
        make_run(
            tmp_path / "b-gaia",
            "scripted:model-b",
            "omnigaia",
            [gaia(f"g{i}", lv, i == 0) for i, lv in enumerate(levels)],  # 1 of 4
        ),
        make_run(
            tmp_path / "a-agent",
            "openai:model-a@http://127.0.0.1:8000/v1",
            "omniagent",
            [agent_task("m", "MCQ", 1.0), agent_task("t1", "TR", 0.9), agent_task("t2", "TR", 0.5)],
        ),
    ]


def test_one_row_per_model_across_benchmarks(runs: list[Path]) -> None:
    board = build_leaderboard(runs, resamples=500)
    assert [r.label for r in board.rows] == ["openai:model-a", "scripted:model-b"]
    assert board.columns == [
        "OmniGAIA Pass@1",
        "OmniGAIA Easy",
        "OmniGAIA Medium",
        "OmniGAIA Hard",
        "OmniAgent MCQ accuracy",
        "OmniAgent mean IoU (TR)",
    ]
    a, b = board.rows
    assert a.cells["OmniGAIA Pass@1"].value == pytest.approx(0.75)
    assert a.cells["OmniGAIA Hard"].value == 0.0 and a.cells["OmniGAIA Easy"].n == 2
    iou = a.cells["OmniAgent mean IoU (TR)"]
    assert iou.value == pytest.approx(0.7) and iou.low is not None and iou.high is not None
    assert iou.low <= 0.7 <= iou.high
    assert b.cells["OmniGAIA Pass@1"].value == pytest.approx(0.25)
    assert "OmniAgent MCQ accuracy" not in b.cells


def test_renderings_carry_values_and_intervals(runs: list[Path]) -> None:
    board = build_leaderboard(runs, resamples=500)
    md = to_markdown(board)
    assert md.splitlines()[0].startswith("| model | OmniGAIA Pass@1 | OmniGAIA Easy")
    row = next(line for line in md.splitlines() if line.startswith("| scripted:model-b"))
    assert "25.0 [" in row and row.rstrip().endswith("| - | - |")
    assert "95% bootstrap intervals" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(board))))
    assert rows[0]["model"] == "openai:model-a"
    assert float(rows[0]["OmniGAIA Pass@1"]) == pytest.approx(75.0)
    assert float(rows[0]["OmniGAIA Pass@1 low"]) <= 75.0 <= float(rows[0]["OmniGAIA Pass@1 high"])
    assert rows[0]["OmniGAIA Pass@1 n"] == "4" and rows[1]["OmniAgent mean IoU (TR)"] == ""
    tex = to_latex(board)
    assert "\\begin{tabular}{lrrrrrr}" in tex and "\\toprule" in tex and "\\bottomrule" in tex
    assert "75.0 {\\scriptsize [" in tex and "--" in tex


def test_agents_and_repeated_runs_get_their_own_rows(tmp_path: Path, runs: list[Path]) -> None:
    other = make_run(
        tmp_path / "b-master", "scripted:model-b", "omnigaia", [gaia("g0", "Easy", True)], "master"
    )
    again = make_run(
        tmp_path / "b-again", "scripted:model-b", "omnigaia", [gaia("g0", "Easy", False)]
    )
    labels = [r.label for r in build_leaderboard([*runs, other, again], resamples=200).rows]
    assert labels == [
        "openai:model-a",
        "scripted:model-b (tir)",
        "scripted:model-b (master)",
        "scripted:model-b (tir) [b-again]",
    ]


def test_leaderboard_command_writes_three_files(tmp_path: Path, runs: list[Path]) -> None:
    out = tmp_path / "tables" / "board"
    result = CliRunner().invoke(
        app, ["leaderboard", *map(str, runs), "--out", str(out), "--resamples", "200"]
    )
    assert result.exit_code == 0, result.output
    assert "| openai:model-a | 75.0 [" in result.output
    for suffix in (".md", ".csv", ".tex"):
        assert (tmp_path / "tables" / f"board{suffix}").is_file()
    assert (tmp_path / "tables" / "board.md").read_text(encoding="utf-8").startswith("| model |")


def test_leaderboard_of_a_missing_run_is_a_one_line_error(tmp_path: Path) -> None:
    proc = CliRunner().invoke(app, ["leaderboard", str(tmp_path / "nope")])
    assert proc.exit_code != 0
    assert isinstance(proc.exception, Exception) and "does not exist" in str(proc.exception)
