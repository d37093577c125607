"""``omnilab eval``, ``score``, ``metrics``, ``compare`` and ``analyze`` with the real ``tir``
agent and scripted models on generated media; a run interrupted (Ctrl-C), then killed, then
resumed ends with exactly one result per task and metrics equal to a hand count."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.bench import BenchError
from omnilab.bench.run_dir import RunDir
from omnilab.cli.main import app
from omnilab.trajectory import read_trajectory

runner = CliRunner()

LEVELS = ("Easy", "Medium", "Hard")
CATEGORIES = ("Art", "Sports")


def label(n: int) -> str:
    """Tasks 0, 3, 6, ... expect "red"; the scripted agent always answers "blue"."""
    return "red" if n % 3 == 0 else "blue"


def write_dataset(folder: Path, media: dict[str, Path], n: int) -> Path:
    # The media beneath the dataset's folder (its default media root), named relative to it.
    (folder / "media").mkdir(exist_ok=True)
    rel = {}
    for kind, source in media.items():
        shutil.copyfile(source, folder / "media" / source.name)
        rel[kind] = f"media/{source.name}"
    items = []
    for i in range(n):
        if i % 2 == 0:
            inputs = [
                {"type": "image", "id": "image_1", "path": rel["image"]},
                {"type": "audio", "id": "audio_1", "path": rel["audio"]},
            ]
        else:
            inputs = [{"type": "video", "id": "video_1", "path": rel["video"]}]
        items.append(
            {
                "id": f"q{i}",
                "question": f"What colour is thing {i}?",
                "answer": label(i),
                "Level": LEVELS[i % 3],
                "category": CATEGORIES[i % 2],
                "omni_modal_input": inputs,
            }
        )
    path = folder / "tasks.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def write_script(path: Path, steps: object) -> str:
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


@pytest.fixture()
def media(image_file: Path, audio_file: Path, video: Path) -> dict[str, Path]:
    return {"image": image_file, "audio": audio_file, "video": video}


def hand_count(n: int) -> tuple[int, dict[str, tuple[int, int]]]:
    """Correct tasks overall and (correct, total) per Level: right exactly where the label is
    "blue" (exact match; the judge says Incorrect to everything else)."""
    correct = sum(label(i) == "blue" for i in range(n))
    by_level = {
        lv: (
            sum(label(i) == "blue" for i in range(n) if LEVELS[i % 3] == lv),
            sum(1 for i in range(n) if LEVELS[i % 3] == lv),
        )
        for lv in LEVELS
    }
    return correct, by_level


def eval_args(data: Path, model: str, judge: str, out: Path) -> list[str]:
    return [
        "eval",
        "omnigaia",
        "--data",
        str(data),
        "--agent",
        "tir",
        "--model",
        model,
        "--judge",
        judge,
        "--out",
        str(out),
    ]


def cli(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def start(*args: str | Path) -> subprocess.Popen[str]:
    env = dict(os.environ, OMNILAB_MODELS__BACKOFF_S="0", OMNILAB_MODELS__MAX_ATTEMPTS="20")
    return subprocess.Popen(
        [sys.executable, "-m", "omnilab", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for_results(path: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError(f"no {count} results in {path} after 60 s")


def test_interrupted_killed_and_resumed_run_loses_and_repeats_nothing(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    n = 10
    data = write_dataset(tmp_path, media, n)
    # Each call hangs 0.6 s then times out and is retried: slow enough to stop mid-run, even
    # when a fast, busy machine finishes the rest within a signal's latency (0.25 s was not).
    # Any interleaving of concurrent tasks works, since every answer is the same.
    model = write_script(
        tmp_path / "agent.json", [{"timeout": True, "seconds": 0.6}, "<answer>blue</answer>"] * n
    )
    judge = write_script(tmp_path / "judge.json", ["Incorrect"] * n)
    out = tmp_path / "run"
    results = RunDir(out).results_file

    # 1. Ctrl-C: in-flight tasks are cancelled, finished ones kept, exit 130 with a resume hint.
    proc = start(*eval_args(data, model, judge, out), "--concurrency", "2")
    wait_for_results(results, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"omnilab eval --out {out} --resume" in err and "Traceback" not in err
    kept = results.read_text().splitlines()
    assert all(json.loads(line) for line in kept) and len(kept) < n

    # 2. SIGKILL of a resumed run, and a line cut off as if killed mid-write.
    proc = start("eval", "--out", out, "--resume", "--no-progress")
    wait_for_results(results, len(kept) + 2, proc)
    proc.kill()
    proc.wait(timeout=30)
    assert len(results.read_text().splitlines()) < n
    with results.open("a") as f:
        f.write('{"schema_version": 1, "task_id": "q9", "pred')

    # 3. Resume to the end.
    proc = start("eval", "--out", out, "--resume", "--no-progress")
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "by level" in stdout and "by category" in stdout

    lines = results.read_text().splitlines()
    ids = [json.loads(line)["task_id"] for line in lines]
    assert sorted(ids) == sorted(f"q{i}" for i in range(n))  # exactly one result per task
    correct, by_level = hand_count(n)
    metrics = json.loads(RunDir(out).metrics_file.read_text())
    assert metrics["tasks"] == n and metrics["failed_runs"] == 0
    assert (metrics["pass_at_1"]["correct"], metrics["pass_at_1"]["total"]) == (correct, n)
    for level, (right, total) in by_level.items():
        rate = metrics["groups"]["level"][level]
        assert (rate["correct"], rate["total"]) == (right, total)
    for i in range(n):
        traj = read_trajectory(RunDir(out).trajectory_file(f"q{i}"))
        assert traj.status == "answered" and traj.answer == "blue" and not traj.truncated


@pytest.fixture()
def finished_run(tmp_path: Path, media: dict[str, Path]) -> Path:
    n = 6
    data = write_dataset(tmp_path, media, n)
    model = write_script(tmp_path / "agent.json", ["<answer>blue</answer>"] * n)
    judge = write_script(tmp_path / "judge.json", ["Incorrect"] * n)
    out = tmp_path / "run"
    output = cli(*eval_args(data, model, judge, out), "--no-progress")
    assert "Pass@1 (judged)" in output and "66.7" in output
    assert "Easy" in output and "Sports" in output
    return out


def test_eval_reads_trajectories_back_only_for_runs_that_reported_searches(
    tmp_path: Path, media: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The search table needs every trajectory read back: only deepsearch runs (which report
    # a "searches" figure per task) pay for it; tests/agents/test_deepsearch_eval.py shows it.
    from omnilab.bench import search_stats

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("trajectories were read back for the search table")

    monkeypatch.setattr(search_stats, "run_search_stats", no_reading)
    data = write_dataset(tmp_path, media, 2)
    model = write_script(tmp_path / "agent.json", ["<answer>blue</answer>"] * 2)
    judge = write_script(tmp_path / "judge.json", ["Correct"] * 2)
    output = cli(*eval_args(data, model, judge, tmp_path / "run"), "--no-progress")
    assert "Pass@1 (judged)" in output and "Searches (" not in output


def test_eval_writes_the_documented_layout(finished_run: Path) -> None:
    folder = RunDir(finished_run)
    config = json.loads(folder.config_file.read_text())
    assert config["agent"] == "tir" and config["judges"][0].endswith("judge.json")
    assert config["model"].startswith("scripted:") and config["concurrency"] == 8
    assert len(folder.results()) == 6 and folder.metrics_file.is_file()
    assert sorted(p.name for p in (finished_run / "trajectories").iterdir()) == [
        f"q{i}.jsonl" for i in range(6)
    ]


def test_score_metrics_compare_and_analyze(finished_run: Path, tmp_path: Path) -> None:
    lenient = write_script(tmp_path / "lenient.json", ["Correct"] * 6)
    original = RunDir(finished_run).results_file.read_bytes()
    out = cli("score", finished_run, "--judge", lenient, "--name", "lenient")
    assert "100.0" in out and "omnilab metrics" in out
    assert RunDir(finished_run).results_file.read_bytes() == original
    assert json.loads(cli("metrics", finished_run, "--json"))["pass_at_1"]["correct"] == 4
    rescored = json.loads(cli("metrics", finished_run, "--scores", "lenient", "--json"))
    assert rescored["pass_at_1"]["correct"] == 6
    compared = json.loads(
        cli("compare", finished_run, finished_run / "scores" / "lenient.jsonl", "--json")
    )
    assert (compared["test"]["only_a"], compared["test"]["only_b"]) == (0, 2)
    table = cli("compare", finished_run, finished_run / "scores" / "lenient.jsonl")
    assert "McNemar" in table and "run:lenient" in table
    reply = json.dumps({"categories": ["Reasoning Error"], "explanation": "red is not blue"})
    analyst = write_script(tmp_path / "analyst.json", [reply] * 2)
    analysis = cli("analyze", finished_run, "--analyst", analyst)
    assert "Reasoning Error" in analysis and "2 (100%)" in analysis
    assert json.loads(RunDir(finished_run).analysis_file.read_text())["analysed"] == 2


def failure(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert isinstance(result.exception, BenchError), (result.output, result.exception)
    return str(result.exception)


def test_user_mistakes_are_one_line_errors(finished_run: Path, tmp_path: Path) -> None:
    assert "--resume needs --out" in failure("eval", "--resume")
    message = failure("eval", "--out", finished_run, "--resume", "--seed", "5")
    assert "cannot resume" in message and "seed: 0 (stored) vs 5 (now)" in message
    data = tmp_path / "tasks.json"
    assert "already holds a run" in failure(
        "eval", "omnigaia", "--data", data, "--model", "scripted:x", "--judge", "scripted:j",
        "--out", finished_run,
    )  # fmt: skip
    assert "needs a judge" in failure("eval", "omnigaia", "--data", data, "--model", "scripted:x")
    assert "unknown scorer" in failure(
        "eval", "omnigaia", "--data", data, "--model", "scripted:x", "--scorer", "nope"
    )
    assert "not a run folder" in failure("score", tmp_path)
    assert "no scores named" in failure("metrics", finished_run, "--scores", "nope")
    # Through the real entry point: one line on stderr, exit status 1.
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "metrics", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "does not exist" in proc.stderr


def test_score_under_the_reference_rules(finished_run: Path, tmp_path: Path) -> None:
    # The judge rambles: the strict rules ask again and finally record undecided; the
    # reference rules read any reply without "Incorrect" as correct.
    rambling = write_script(tmp_path / "rambling.json", ["Looks right to me"] * 30)
    strict = json.loads(cli("score", finished_run, "--judge", rambling, "--json"))
    assert strict["summary"]["pass_at_1"]["undecided"] == 2
    ref = json.loads(
        cli("score", finished_run, "--judge", rambling, "--rules", "reference", "--json")
    )
    assert ref["summary"]["pass_at_1"]["correct"] == 6
    assert ref["summary"]["rules"]["reference"]["correct"] == 6
    assert "use strict or reference" in failure("score", finished_run, "--rules", "lenient")


def test_sigterm_ends_a_run_as_ctrl_c_does(tmp_path: Path, media: dict[str, Path]) -> None:
    """Issue 44.14: ``kill PID`` (SIGTERM) exits 130 with the resume line, and the in-flight
    trajectories end with ``run_end``, as Ctrl-C does."""
    data = write_dataset(tmp_path, media, 2)
    model = write_script(tmp_path / "agent.json", [{"timeout": True, "seconds": 60}] * 4)
    judge = write_script(tmp_path / "judge.json", ["Incorrect"] * 2)
    out = tmp_path / "run"
    proc = start(*eval_args(data, model, judge, out), "--concurrency", "2", "--no-progress")
    deadline = time.monotonic() + 60
    files: list[Path] = []
    while time.monotonic() < deadline:  # both tasks are waiting on their model call
        files = list((out / "trajectories").glob("*.jsonl"))
        if len(files) == 2 and all("run_start" in f.read_text() for f in files):
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    time.sleep(0.5)  # into the hanging model calls
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"omnilab eval --out {out} --resume" in err and "Traceback" not in err
    assert len(files) == 2
    for f in files:
        assert read_trajectory(f).run_end is not None, f.read_text()


def test_a_rescoring_keeps_the_scorers_spelling(finished_run: Path) -> None:
    """Issue 44.20: ``score --scorer answer_in_reply`` is read back by ``--scores
    answer_in_reply``; a file an older version wrote (answer-in-reply) still is."""
    out = cli("score", finished_run, "--scorer", "answer_in_reply")
    assert f"omnilab metrics {finished_run} --scores answer_in_reply" in " ".join(out.split())
    assert (finished_run / "scores" / "answer_in_reply.jsonl").is_file()
    assert json.loads(cli("metrics", finished_run, "--scores", "answer_in_reply", "--json"))
    (finished_run / "scores" / "answer_in_reply.jsonl").rename(
        finished_run / "scores" / "answer-in-reply.jsonl"
    )
    assert json.loads(cli("metrics", finished_run, "--scores", "answer_in_reply", "--json"))


def test_a_stopped_analysis_keeps_its_labels(finished_run: Path, tmp_path: Path) -> None:
    """Issue 44.15: labels are saved as they come; a rerun by the same analyst asks only for
    the tasks not labelled yet, and the partial file goes once analysis.json is written."""
    reply = json.dumps({"categories": ["Reasoning Error"], "explanation": "red is not blue"})
    # the first analyst answers once, then its key is refused: the analysis stops
    first = write_script(tmp_path / "analyst.json", {"outputs": [reply, {"error": 401}]})
    stopped = runner.invoke(app, ["analyze", str(finished_run), "--analyst", first, "-c", "1"])
    assert stopped.exit_code != 0
    partial = finished_run / "analysis.partial.jsonl"
    saved = [json.loads(line) for line in partial.read_text().splitlines()]
    assert len(saved) == 1 and saved[0]["label"]["categories"] == ["Reasoning Error"]
    # the same analyst again: one call left to make (its script holds just one reply)
    write_script(tmp_path / "analyst.json", [reply])
    cli("analyze", finished_run, "--analyst", first)
    assert json.loads(RunDir(finished_run).analysis_file.read_text())["analysed"] == 2
    assert not partial.exists()
