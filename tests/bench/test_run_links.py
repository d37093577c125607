"""``score`` and ``analyze`` read a run folder that may be another user's as ``report`` does: a
link planted at ``results.jsonl``, at a trajectory, at ``trajectories/`` or at the analysis's
partial labels is never followed (the secret it points at reaches no output, no written file
and no analyst request), a FIFO never blocks, and one line names the refused file."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from test_bench_runner import StandInAgent, make_dataset, run
from typer.testing import CliRunner

from omnilab.bench import BenchError
from omnilab.bench.reports import analyze_run, open_source
from omnilab.bench.rescore import rescore_run
from omnilab.bench.run_dir import RunDir
from omnilab.bench.scoring import OmniGaiaScorer, Score
from omnilab.bench.task import Task
from omnilab.cli.main import app
from omnilab.models import Model
from omnilab.models.providers import scripted
from omnilab.models.providers.scripted import scripted_model
from omnilab.trajectory import Trajectory, TrajectoryError

REPLY = json.dumps({"categories": ["Visual Perception Error"], "explanation": "wrong colour"})


@pytest.fixture()
def finished(tmp_path: Path) -> Path:
    """A run of six tasks: t3 crashed, t5 and t6 answered wrongly (three failures)."""
    (tmp_path / "data").mkdir()
    out = tmp_path / "run"
    run(make_dataset(tmp_path / "data"), out, agent=StandInAgent({"t3": "crash"}))
    return out


@pytest.fixture()
def marker() -> str:
    return f"ROOT-ONLY-{uuid.uuid4().hex}"


def private(tmp_path: Path, name: str, text: str) -> Path:
    """A 0600 file in a 0700 folder outside the run (root's secret)."""
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def plant(at: Path, target: Path) -> None:
    if at.is_dir() and not at.is_symlink():
        shutil.rmtree(at)
    else:
        at.unlink(missing_ok=True)
    at.symlink_to(target)


def analyst(n: int = 3) -> Model:
    return scripted_model([scripted.text(REPLY)] * n, name="scripted:analyst")


def requests(model: Model) -> str:
    adapter = model.adapter
    assert isinstance(adapter, scripted.ScriptedAdapter)
    return "".join(m.text for req in adapter.requests for m in req[0])


def written(folder: Path) -> str:
    return "".join(
        p.read_text(errors="replace")
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink()
    )


def lenient() -> OmniGaiaScorer:
    return OmniGaiaScorer(scripted_model([scripted.text("Correct")] * 6, name="scripted:j"))


def test_a_clean_run_scores_and_analyses_as_before(finished: Path) -> None:
    outcome = asyncio.run(
        rescore_run(finished, scorer_name="omnigaia", judges=["scripted:j"], scorer=lenient())
    )
    assert outcome.summary.pass_at_1.correct == 5  # t3 crashed: a failure stays a failure
    model = analyst()
    analysis = asyncio.run(analyze_run(open_source(finished), model))
    assert analysis.analysed == 3 and analysis.notices == []
    assert "answer: pink" in requests(model)  # t5's trajectory reached the analyst


def test_a_linked_results_file_is_refused_by_score_and_analyze(
    finished: Path, tmp_path: Path, marker: str
) -> None:
    results = RunDir(finished).results_file
    text = results.read_text().replace("pink", marker)
    secret = private(tmp_path, "results", text)
    plant(results, secret)
    with pytest.raises(BenchError, match=r"results\.jsonl is a link") as scored:
        asyncio.run(
            rescore_run(finished, scorer_name="omnigaia", judges=["scripted:j"], scorer=lenient())
        )
    model = analyst()
    with pytest.raises(BenchError, match=r"results\.jsonl is a link") as analysed:
        asyncio.run(analyze_run(open_source(finished), model))
    for error in (scored.value, analysed.value):
        assert "\n" not in str(error) and marker not in str(error)
    assert marker not in written(finished) and marker not in requests(model)
    assert secret.read_text() == text  # untouched


def test_a_linked_trajectory_is_left_out_with_one_notice(
    finished: Path, tmp_path: Path, marker: str
) -> None:
    trajectory = RunDir(finished).trajectory_file("t5")
    secret = private(tmp_path, "t5.jsonl", trajectory.read_text().replace("pink", marker))
    plant(trajectory, secret)
    model = analyst()
    analysis = asyncio.run(analyze_run(open_source(finished), model))
    assert analysis.analysed == 3  # the run goes on: t5 is judged from its result alone
    (notice,) = analysis.notices
    assert "t5.jsonl is a link" in notice and "\n" not in notice
    assert marker not in requests(model) and marker not in written(finished)


def test_a_linked_trajectories_folder_is_left_out(
    finished: Path, tmp_path: Path, marker: str
) -> None:
    folder = finished / "trajectories"
    theirs = tmp_path / "private" / "trajectories"
    shutil.copytree(folder, theirs)
    for path in theirs.iterdir():
        path.write_text(path.read_text().replace("What colour", f"{marker} What colour"))
    plant(folder, theirs)
    model = analyst()
    analysis = asyncio.run(analyze_run(open_source(finished), model))
    assert analysis.analysed == 3
    assert sorted(n.split("/")[-1].split(" ")[0] for n in analysis.notices) == [
        "t3.jsonl",
        "t5.jsonl",
        "t6.jsonl",
    ]
    assert all("passes through one" in n or "is a link" in n for n in analysis.notices)
    assert marker not in requests(model) and marker not in written(finished)


def test_a_fifo_trajectory_stays_refused(finished: Path) -> None:
    trajectory = RunDir(finished).trajectory_file("t6")
    trajectory.unlink()
    os.mkfifo(trajectory)
    analysis = asyncio.run(analyze_run(open_source(finished), analyst()))  # must not block
    (notice,) = analysis.notices
    assert "t6.jsonl is not a regular file" in notice


def test_a_linked_partial_labels_file_is_neither_read_nor_written(
    finished: Path, tmp_path: Path
) -> None:
    label = {"task_id": "t5", "sample": 0, "categories": ["Other"], "explanation": "planted"}
    entry = json.dumps({"analyst": "scripted:analyst", "label": label}) + "\n"
    secret = private(tmp_path, "labels", entry)
    plant(RunDir(finished).path / "analysis.partial.jsonl", secret)
    with pytest.raises(BenchError, match=r"analysis\.partial\.jsonl is a link"):
        asyncio.run(analyze_run(open_source(finished), analyst()))
    assert secret.read_text() == entry  # nothing appended through the link


class TraceScorer:
    """A scorer that needs each task's trajectory (as Code-X's do)."""

    name = "trace"
    needs_trajectory = True

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def score(
        self, task: Task, prediction: str, *, trajectory: Trajectory | None = None
    ) -> Score:
        assert trajectory is not None
        self.seen.append(json.dumps([e.model_dump(mode="json") for e in trajectory.events]))
        return Score(scorer=self.name, value=1.0, correct=True)


def test_score_refuses_a_linked_trajectory_with_one_line(
    finished: Path, tmp_path: Path, marker: str
) -> None:
    trajectory = RunDir(finished).trajectory_file("t2")
    plant(trajectory, private(tmp_path, "t2.jsonl", trajectory.read_text().replace("red", marker)))
    scorer = TraceScorer()
    with pytest.raises(TrajectoryError, match=r"t2\.jsonl is a link") as refused:
        asyncio.run(rescore_run(finished, scorer_name="omnigaia", judges=[], scorer=scorer))
    assert "\n" not in str(refused.value)
    assert marker not in "".join(scorer.seen) and marker not in written(finished)


def test_the_analyze_command_prints_one_notice_per_refused_file(
    finished: Path, tmp_path: Path, marker: str
) -> None:
    trajectory = RunDir(finished).trajectory_file("t6")
    plant(trajectory, private(tmp_path, "t6.jsonl", trajectory.read_text().replace("teal", marker)))
    script = tmp_path / "analyst.json"
    script.write_text(json.dumps([REPLY] * 3), encoding="utf-8")
    result = CliRunner().invoke(app, ["analyze", str(finished), "--analyst", f"scripted:{script}"])
    assert result.exit_code == 0, result.output
    notices = [line for line in result.output.splitlines() if line.startswith("notice:")]
    assert len(notices) == 1 and "t6.jsonl is a link" in notices[0]
    assert marker not in result.output and marker not in written(finished)


def test_the_score_command_refuses_a_linked_run_json(
    finished: Path, tmp_path: Path, marker: str
) -> None:
    config = RunDir(finished).config_file
    text = config.read_text().replace('"scorer": "omnigaia"', f'"scorer": "{marker}"')
    assert marker in text  # followed, it would name an unknown scorer: the marker in the error
    plant(config, private(tmp_path, "run.json", text))
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps(["Correct"] * 6), encoding="utf-8")
    result = CliRunner().invoke(app, ["score", str(finished), "--judge", f"scripted:{judge}"])
    assert isinstance(result.exception, BenchError), result.output
    assert "run.json is a link" in str(result.exception) and "\n" not in str(result.exception)
    assert marker not in result.output and marker not in written(finished)
    assert not (finished / "scores").exists()


def test_a_run_json_others_can_change_names_no_dataset_read_with_your_rights(
    finished: Path, tmp_path: Path
) -> None:
    finished.chmod(0o777)  # anyone could replace run.json and name root's private dataset
    with pytest.raises(BenchError, match=r"writable by other users.*pass the run's dataset"):
        asyncio.run(rescore_run(finished, scorer_name="omnigaia", judges=[], scorer=lenient()))
    with pytest.raises(BenchError, match=r"writable by other users.*pass the run's dataset"):
        asyncio.run(analyze_run(open_source(finished), analyst()))
    data = tmp_path / "data" / "tasks.json"  # named by the user: read
    outcome = asyncio.run(
        rescore_run(finished, scorer_name="omnigaia", judges=[], scorer=lenient(), data=data)
    )
    assert outcome.summary.pass_at_1.correct == 5
    assert asyncio.run(analyze_run(open_source(finished), analyst(), data=data)).analysed == 3


def test_score_writes_nothing_through_a_linked_scores_folder(
    finished: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "private" / "etc"
    elsewhere.mkdir(parents=True)
    (finished / "scores").symlink_to(elsewhere)
    with pytest.raises(BenchError, match=r"scores is a link; scores are not written"):
        asyncio.run(rescore_run(finished, scorer_name="omnigaia", judges=[], scorer=lenient()))
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("command", ["metrics", "compare"])
def test_metrics_and_compare_refuse_a_linked_results_file(
    finished: Path, tmp_path: Path, marker: str, command: str
) -> None:
    clean = tmp_path / "clean-run"
    shutil.copytree(finished, clean)
    results = RunDir(finished).results_file
    text = results.read_text().replace("pink", marker)
    secret = private(tmp_path, "results", text)
    plant(results, secret)
    metrics = RunDir(finished).metrics_file.read_bytes()
    args = [command, str(finished)] + ([str(clean)] if command == "compare" else [])
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, BenchError), result.output
    assert "results.jsonl is a link" in str(result.exception)
    assert "\n" not in str(result.exception)
    assert marker not in result.output and marker not in written(finished)
    assert RunDir(finished).metrics_file.read_bytes() == metrics  # nothing from the secret
    assert secret.read_text() == text
    # The clean copy still gives its metrics.
    assert CliRunner().invoke(app, ["metrics", str(clean)]).exit_code == 0
