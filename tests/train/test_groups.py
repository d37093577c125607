"""``omnilab export rl-groups`` end to end: ``omnilab eval --samples 3`` against the local fake
server, which returns top-k logprobs, then the export, checked against hand-computed numbers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.bench.run_dir import RunDir
from omnilab.cli.main import app
from omnilab.errors import OmnilabError
from omnilab.models.fake_server import (
    FakeOpenAIServer,
    FakeReply,
    reply_text,
    reply_tool_calls,
    token_logprobs,
)
from omnilab.trajectory import read_trajectory

runner = CliRunner()
LOGPROBS = ["-O", 'generate={"top_logprobs": 2}']


def invoke(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def ok(*args: str | Path) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, (result.output, result.exception)
    return str(result.output)


def even(n: int) -> list[dict[str, Any]]:
    """``n`` tokens, each one of two equally likely alternatives: entropy ln 2 apiece."""
    half = math.log(0.5)
    return token_logprobs(*[("a", half)] * n, top=[[("a", half), ("b", half)]] * n)


def certain(n: int) -> list[dict[str, Any]]:
    """``n`` tokens the model was sure of: entropy 0."""
    return token_logprobs(*[("a", 0.0)] * n, top=[[("a", 0.0)]] * n)


def with_logprobs(reply: FakeReply, logprobs: list[dict[str, Any]]) -> FakeReply:
    assert isinstance(reply.body, dict)
    reply.body["choices"][0]["logprobs"] = {"content": logprobs}
    return reply


def write_task(folder: Path) -> Path:
    path = folder / "tasks.jsonl"
    path.write_text(
        json.dumps({"id": "q0", "question": "Which colour is the sky?", "answer": "blue"}) + "\n",
        encoding="utf-8",
    )
    return path


def two_turns(
    first: list[dict[str, Any]], answer: str, second: list[dict[str, Any]]
) -> list[FakeReply]:
    """A tool call (to a tool the agent lacks: it answers with an error) and then the answer."""
    return [
        with_logprobs(reply_tool_calls(("lookup", {"q": "sky"})), first),
        reply_text(f"<answer>{answer}</answer>", logprobs=second),
    ]


def run_three_samples(tmp_path: Path) -> tuple[Path, FakeOpenAIServer]:
    data = write_task(tmp_path)
    out = tmp_path / "run"
    with FakeOpenAIServer() as server:
        # One task at a time, so the samples take the queued replies in order 0, 1, 2.
        server.push(
            *two_turns(even(2), "blue", certain(2)),  # sample 0: right, H = (ln2, 0)
            *two_turns(certain(1), "red", even(3)),  # sample 1: wrong, H = (0, ln2)
            *two_turns(even(1), "red", even(1)),  # sample 2: wrong, H = (ln2, ln2)
        )
        ok(
            "eval", "jsonl", "--data", data, "--model", f"vllm:test@{server.base_url}",
            "--scorer", "answer_set", "--out", out, "--no-progress", "--samples", "3",
            "--concurrency", "1", "--tools", "", *LOGPROBS,
        )  # fmt: skip
    return out, server


@pytest.mark.slow
def test_taura_export_of_a_three_sample_run_matches_a_hand_computation(tmp_path: Path) -> None:
    run, server = run_three_samples(tmp_path)
    # The request asked for logprobs, and the trajectory kept them.
    bodies = [r.body for r in server.chat_requests]
    assert len(bodies) == 6 and all(
        b["logprobs"] is True and b["top_logprobs"] == 2 for b in bodies
    )
    calls = read_trajectory(RunDir(run).trajectory_file("q0", 1)).contexts()
    stored = [c.output.logprobs for c in calls if c.output is not None]
    assert [len(s or []) for s in stored] == [1, 3]
    assert all(len(t.top_logprobs) in (1, 2) for s in stored for t in s or [])
    target = tmp_path / "groups.jsonl"
    output = ok("export", "rl-groups", run, "--out", target, "--advantage", "taura")
    assert "wrote 3 trajectories from 1 group (taura, reward score)" in output
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [(r["sample"], r["reward"]) for r in rows] == [(0, 1.0), (1, 0.0), (2, 0.0)]
    # Eq. 3: rewards (1, 0, 0) -> A = (2/sqrt3, -1/sqrt3, -1/sqrt3) (sample std 1/sqrt3).
    r3 = math.sqrt(3)
    expected_a = [2 / r3, -1 / r3, -1 / r3]
    assert [r["advantage"] for r in rows] == pytest.approx(expected_a, rel=1e-5)
    # Turn entropies (ln2, 0), (0, ln2), (ln2, ln2): group mean 4 ln2 / 6, so w = H / (2/3 ln2).
    ln2 = math.log(2)
    entropies = [[t["entropy"] for t in r["turns"]] for r in rows]
    assert entropies == [pytest.approx(e) for e in ([ln2, 0.0], [0.0, ln2], [ln2, ln2])]
    assert [[t["tokens"] for t in r["turns"]] for r in rows] == [[2, 2], [1, 3], [1, 1]]
    weights = [[1.5, 0.0], [0.0, 1.5], [1.5, 1.5]]
    for row, w, a in zip(rows, weights, expected_a, strict=True):
        assert [t["weight"] for t in row["turns"]] == pytest.approx(w)
        assert [t["advantage"] for t in row["turns"]] == pytest.approx([a * x for x in w], rel=1e-5)
    meta = json.loads((tmp_path / "groups.jsonl.meta.json").read_text(encoding="utf-8"))
    assert meta["advantage"] == "taura" and meta["entropy"]["method"] == "renormalized"
    assert "renormalised" in meta["entropy"]["approximation"] and meta["std"] == "sample"


def plain_run(tmp_path: Path, answers: dict[str, str], replies: list[str], samples: int) -> Path:
    """A run of ``answers`` (task id -> label) whose rollouts answer ``replies`` in order, without
    logprobs."""
    data = tmp_path / "plain.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": i, "question": f"Q {i}?", "answer": a}) + "\n"
            for i, a in answers.items()
        ),
        encoding="utf-8",
    )
    out = tmp_path / "plain-run"
    with FakeOpenAIServer() as server:
        server.push(*(reply_text(f"<answer>{r}</answer>") for r in replies))
        ok(
            "eval", "jsonl", "--data", data, "--model", f"vllm:test@{server.base_url}",
            "--scorer", "answer_set", "--out", out, "--no-progress", "--samples", str(samples),
            "--concurrency", "1", "--tools", "",
        )  # fmt: skip
    return out


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_grpo_gives_every_turn_the_trajectory_advantage(tmp_path: Path) -> None:
    run = plain_run(tmp_path, {"q0": "blue"}, ["blue", "red", "blue", "red"], samples=4)
    target = tmp_path / "g.jsonl"
    output = ok("export", "rl-groups", run, "--out", target)
    assert "wrote 4 trajectories from 1 group (grpo, reward score)" in output
    rows = read_rows(target)
    # Rewards (1, 0, 1, 0): mean 0.5, sample std 1/sqrt3 -> A = +-sqrt3/2.
    half = math.sqrt(3) / 2
    assert [r["advantage"] for r in rows] == pytest.approx([half, -half, half, -half], rel=1e-5)
    for row in rows:
        assert [(t["weight"], t["entropy"]) for t in row["turns"]] == [(1.0, None)]
        assert row["turns"][0]["advantage"] == row["advantage"]
    ok("export", "rl-groups", run, "--out", target, "--std", "population")
    assert [r["advantage"] for r in read_rows(target)] == pytest.approx([1, -1, 1, -1], rel=1e-5)


def test_gspo_drops_zero_variance_groups_and_says_so(tmp_path: Path) -> None:
    # Task-major order: q0 gets (blue, blue), q1 (red, blue).
    run = plain_run(tmp_path, {"q0": "blue", "q1": "red"}, ["blue", "blue", "red", "blue"], 2)
    target = tmp_path / "g.jsonl"
    output = ok("export", "rl-groups", run, "--out", target, "--advantage", "gspo")
    # issue 44.12: the rows come from the one group kept, of two
    assert "wrote 2 trajectories from 1 group of 2 (gspo" in output
    assert "1 group dropped" in output
    rows = read_rows(target)
    # q1: rewards (1, 0), sample std 1/sqrt2 -> A = +-1/sqrt2.
    assert [(r["task_id"], r["sample"]) for r in rows] == [("q1", 0), ("q1", 1)]
    r2 = 1 / math.sqrt(2)
    assert [r["advantage"] for r in rows] == pytest.approx([r2, -r2], rel=1e-5)
    meta = json.loads(target.with_name("g.jsonl.meta.json").read_text(encoding="utf-8"))
    assert meta["dropped"] == {"q0": "zero-variance"}


def test_taura_without_logprobs_is_a_one_line_error_or_uniform_when_asked(
    tmp_path: Path,
) -> None:
    run = plain_run(tmp_path, {"q0": "blue"}, ["blue", "red"], samples=2)
    target = tmp_path / "g.jsonl"
    # As a user sees it: one line on stderr, no traceback, no file written.
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "export", "rl-groups", str(run), "--out", str(target),
         "--advantage", "taura"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "recorded no logprobs" in proc.stderr and "top_logprobs" in proc.stderr
    assert "--missing-entropy uniform" in proc.stderr and not target.exists()
    ok(
        "export", "rl-groups", run, "--out", target, "--advantage", "taura",
        "--missing-entropy", "uniform",
    )  # fmt: skip
    rows = read_rows(target)
    assert [r["turns"][0]["weight"] for r in rows] == [1.0, 1.0]
    assert [r["turns"][0]["advantage"] for r in rows] == [r["advantage"] for r in rows]


def test_reward_rescores_with_a_trajectory_scorer_like_omnilab_score(tmp_path: Path) -> None:
    run, _ = run_three_samples(tmp_path)
    target = tmp_path / "g.jsonl"
    output = ok("export", "rl-groups", run, "--out", target, "--reward", "code-x-reward")
    assert "reward code-x-reward" in output
    ok("score", run, "--scorer", "code-x-reward", "--name", "cx")
    scored = {
        json.loads(line)["sample"]: json.loads(line)["score"]["value"]
        for line in (run / "scores" / "cx.jsonl").read_text(encoding="utf-8").splitlines()
    }
    rows = read_rows(target)
    assert [r["reward"] for r in rows] == [scored[r["sample"]] for r in rows]
    assert [r["reward"] for r in rows] != [1.0, 0.0, 0.0]  # not the run's own scores


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--advantage", "ppo"], "--advantage 'ppo': use one of grpo, gspo, taura"),
        (["--entropy", "exact"], "--entropy 'exact': use one of"),
        (["--judge", "openai:gpt-4o"], "--judge needs --reward"),
        (["--reward", "no-such-scorer"], "no-such-scorer"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    run = plain_run(tmp_path, {"q0": "blue"}, ["blue"], samples=1)
    result = invoke("export", "rl-groups", run, "--out", tmp_path / "g.jsonl", *args)
    assert isinstance(result.exception, OmnilabError), result.output
    assert message in str(result.exception)


def test_a_missing_run_folder_and_a_folder_as_out_are_one_line_errors(tmp_path: Path) -> None:
    result = invoke("export", "rl-groups", tmp_path / "nope", "--out", tmp_path / "g.jsonl")
    assert isinstance(result.exception, OmnilabError)
    assert str(tmp_path / "nope") in str(result.exception)
    result = invoke("export", "rl-groups", tmp_path, "--out", tmp_path)
    assert isinstance(result.exception, OmnilabError) and "is a folder" in str(result.exception)


def test_logprobs_without_alternatives_need_the_surprisal_estimate(tmp_path: Path) -> None:
    data = write_task(tmp_path)
    run = tmp_path / "run"
    # Sampled tokens of probability 1/2 and 1/4, no top_logprobs: surprisal ln2 and ln4.
    bare = token_logprobs(("a", math.log(0.5)), ("b", math.log(0.25)))
    with FakeOpenAIServer() as server:
        server.push(
            reply_text("<answer>blue</answer>", logprobs=bare),
            reply_text("<answer>red</answer>", logprobs=bare[:1]),
        )
        ok(
            "eval", "jsonl", "--data", data, "--model", f"vllm:test@{server.base_url}",
            "--scorer", "answer_set", "--out", run, "--no-progress", "--samples", "2",
            "--concurrency", "1", "--tools", "", "-O", 'generate={"logprobs": true}',
        )  # fmt: skip
    target = tmp_path / "g.jsonl"
    result = invoke("export", "rl-groups", run, "--out", target, "--advantage", "taura")
    assert isinstance(result.exception, OmnilabError)
    assert "without top_logprobs" in str(result.exception)
    assert "--entropy surprisal" in str(result.exception)
    ok(
        "export",
        "rl-groups",
        run,
        "--out",
        target,
        "--advantage",
        "taura",
        "--entropy",
        "surprisal",
    )
    rows = read_rows(target)
    ln2 = math.log(2)
    # H = (1.5 ln2, ln2): group mean 1.25 ln2 -> w = (1.2, 0.8); A = +-1/sqrt2.
    assert [r["turns"][0]["entropy"] for r in rows] == pytest.approx([1.5 * ln2, ln2])
    assert [r["turns"][0]["weight"] for r in rows] == pytest.approx([1.2, 0.8])
    r2 = 1 / math.sqrt(2)
    assert [r["turns"][0]["advantage"] for r in rows] == pytest.approx(
        [1.2 * r2, -0.8 * r2], rel=1e-5
    )
    meta = json.loads(target.with_name("g.jsonl.meta.json").read_text(encoding="utf-8"))
    assert (
        meta["entropy"]["method"] == "surprisal" and "unbiased" in meta["entropy"]["approximation"]
    )


def test_a_role_with_no_calls_is_an_error_not_empty_turns(tmp_path: Path) -> None:
    run = plain_run(tmp_path, {"q0": "blue"}, ["blue", "red"], samples=2)
    result = invoke("export", "rl-groups", run, "--out", tmp_path / "g.jsonl", "--role", "policy")
    assert isinstance(result.exception, OmnilabError)
    assert "no model call of role 'policy' (roles: agent)" in str(result.exception)


def test_trajectories_are_released_once_their_group_is_read(tmp_path: Path) -> None:
    from omnilab.train.groups import GroupOptions, build_rows
    from omnilab.train.runs import iter_records

    run = plain_run(tmp_path, {"q0": "blue", "q1": "red"}, ["blue", "red", "red", "red"], 2)
    records = list(iter_records([run]))
    rows, summary = build_rows(records, GroupOptions())
    assert len(rows) == 4 and summary.groups == 2
    # Memory holds one group's trajectories at a time, not the whole run's.
    assert all("trajectory" not in r.__dict__ for r in records)


def test_rl_groups_checks_itself(tmp_path: Path) -> None:
    """Issue 44.11: ``export rl-groups --check`` reads the file back like every export."""
    run = plain_run(tmp_path, {"q0": "blue"}, ["blue", "red"], samples=2)
    target = tmp_path / "g.jsonl"
    output = ok("export", "rl-groups", run, "--out", target, "--check")
    assert "check: round trip: 2 rows read back unchanged" in output
    assert "check: rl-groups rules: every row passes" in output
