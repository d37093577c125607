"""Exit status of ``ask``, ``chat``, ``eval`` and ``demo`` by outcome: 0 only when the run
answered; the table in the docs and in ``--help`` is the one in code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.cli.exit_codes import EPILOG, ExitCode, table
from omnilab.cli.main import app
from omnilab.config import get_settings

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[1] / "docs" / "agents.md"


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    get_settings.cache_clear()


def script(tmp_path: Path, steps: list[object], name: str = "script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def omnilab(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMNILAB_AGENTS__RUNS_DIR": str(cwd / "runs")}
    return subprocess.run(
        [sys.executable, "-m", "omnilab", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_one_table_in_code_docs_and_help() -> None:
    codes = [code for code, _, _ in table()]
    assert codes == [0, 1, 2, 3, 4, 130] and len(set(codes)) == len(codes)
    text = DOCS.read_text(encoding="utf-8")
    for code, name, meaning in table():
        assert f"| {code} | {name} | {meaning} |" in text
    for command in ("ask", "chat", "eval", "demo"):
        shown = runner.invoke(app, [command, "--help"], terminal_width=400)
        assert shown.exit_code == 0
        flat = " ".join(shown.output.split())
        assert "Exit status: 0 the run answered" in flat, command
        assert "4 the model or its endpoint failed" in flat and "130 interrupted" in flat
    assert "4 the model or its endpoint failed" in EPILOG


def test_ask_answered_no_answer_and_model_failure(video: Path, tmp_path: Path) -> None:
    answered = runner.invoke(
        app, ["ask", str(video), "Q?", "--model", script(tmp_path, ["<answer>4</answer>"])]
    )
    assert answered.exit_code == ExitCode.ANSWERED, answered.output
    # Out of turns before any answer: it ran, it did not answer.
    looping = script(
        tmp_path, [{"tool_call": {"name": "web_search", "arguments": {"query": "x"}}}] * 3, "l.json"
    )
    budget = runner.invoke(
        app, ["ask", str(video), "Q?", "--model", looping, "--max-turns", "1", "--json"]
    )
    assert budget.exit_code == ExitCode.NO_ANSWER, budget.output
    summary = json.loads(budget.output[budget.output.index("{") :])
    assert summary["answer"] is None and summary["exit_code"] == 3
    refused = runner.invoke(
        app, ["ask", str(video), "Q?", "--model", script(tmp_path, [{"error": 401}], "e.json")]
    )
    assert refused.exit_code == ExitCode.MODEL_FAILURE, refused.output


def test_ask_model_failure_message_is_printed_once(video: Path, tmp_path: Path) -> None:
    proc = omnilab("ask", video, "Q?", "--model", script(tmp_path, [{"error": 401}]), cwd=tmp_path)
    assert proc.returncode == ExitCode.MODEL_FAILURE, proc.stderr
    assert "Traceback" not in proc.stderr
    shown = proc.stdout + proc.stderr
    assert shown.count("HTTP 401: scripted error") == 1, shown  # not again as the run's error


def test_ask_bad_input_exits_1(tmp_path: Path) -> None:
    proc = omnilab("ask", tmp_path / "missing.mp4", "Q?", cwd=tmp_path)
    assert proc.returncode == ExitCode.BAD_INPUT and proc.stdout == ""
    usage = omnilab("ask", "--no-such-option", cwd=tmp_path)
    assert usage.returncode == ExitCode.USAGE


def test_ask_interrupted_exits_130(video: Path, tmp_path: Path) -> None:
    hang = script(tmp_path, [{"timeout": True, "seconds": 60}])
    env = {**os.environ, "OMNILAB_AGENTS__RUNS_DIR": str(tmp_path / "runs")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "omnilab", "ask", str(video), "Q?", "--model", hang],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the run has started: its model call hangs now
        started = list((tmp_path / "runs").glob("*/trajectory.jsonl"))
        if started and "run_start" in started[0].read_text():
            break
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert "Traceback" not in err and err.count("interrupted") == 1


def test_chat_exit_codes(tmp_path: Path) -> None:
    said = omnilab("chat", "Hi", "--model", script(tmp_path, ["Hello"]), cwd=tmp_path)
    assert said.returncode == ExitCode.ANSWERED and said.stdout.strip() == "Hello"
    empty = omnilab(
        "chat", "Hi", "--model", script(tmp_path, [{"empty": True}], "e.json"), cwd=tmp_path
    )
    assert empty.returncode == ExitCode.NO_ANSWER, empty.stderr
    failed = omnilab(
        "chat", "Hi", "--model", script(tmp_path, [{"error": 401}], "f.json"), cwd=tmp_path
    )
    assert failed.returncode == ExitCode.MODEL_FAILURE, failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: model scripted:"), failed.stderr
    unknown = omnilab("chat", "Hi", "--model", "nope:x", cwd=tmp_path)
    assert unknown.returncode == ExitCode.BAD_INPUT  # a name the user got wrong is bad input


def _tasks(tmp_path: Path) -> Path:
    data = tmp_path / "tasks.jsonl"
    rows = [
        {"id": "a", "question": "2+2?", "answer": "4"},
        {"id": "b", "question": "3+3?", "answer": "6"},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ({"outputs": ["<answer>4</answer>"], "repeat": True}, ExitCode.ANSWERED),
        ({"outputs": [{"empty": True}], "repeat": True}, ExitCode.NO_ANSWER),
        ({"outputs": [{"error": 400}], "repeat": True}, ExitCode.MODEL_FAILURE),
    ],
)
def test_eval_exit_codes(tmp_path: Path, steps: dict[str, object], expected: ExitCode) -> None:
    model = tmp_path / "model.json"
    model.write_text(json.dumps(steps))
    args = ["eval", "jsonl", "--data", str(_tasks(tmp_path)), "--model", f"scripted:{model}"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "run"), "--max-turns", "2"])
    assert result.exit_code == expected, (result.output, result.exception)


def test_eval_refused_key_is_a_model_failure(tmp_path: Path) -> None:
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"outputs": [{"error": 401}], "repeat": True}))
    proc = omnilab(
        "eval", "jsonl", "--data", _tasks(tmp_path), "--model", f"scripted:{model}",
        "--out", tmp_path / "run", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == ExitCode.MODEL_FAILURE, proc.stderr
    assert "Traceback" not in proc.stderr


def test_demo_exit_codes(tmp_path: Path) -> None:
    answered = script(tmp_path, ["<answer>omnilab demo</answer>"])
    ok = runner.invoke(app, ["demo", "--out", str(tmp_path / "a"), "--model", answered])
    assert ok.exit_code == ExitCode.ANSWERED, ok.output
    looping = script(
        tmp_path, [{"tool_call": {"name": "web_search", "arguments": {"query": "x"}}}] * 3, "l.json"
    )
    none = runner.invoke(
        app, ["demo", "--out", str(tmp_path / "b"), "--model", looping, "--max-turns", "1"]
    )
    assert none.exit_code == ExitCode.NO_ANSWER, none.output


def test_which_errors_are_model_failures() -> None:
    from omnilab.bench.endpoint_guard import EndpointDownError
    from omnilab.bench.executor import _stop
    from omnilab.inputs import InputUnreadableError
    from omnilab.models.errors import ErrorKind, ModelConfigError, ModelError

    refused = ModelError("m", "HTTP 401", kind=ErrorKind.AUTH)
    assert refused.model_failure and EndpointDownError("the endpoint looks down").model_failure
    assert _stop("stopped at task t1", refused).model_failure  # eval stops: exit 4
    unknown = ModelConfigError("nope:x", "unknown provider")
    assert not unknown.model_failure and not _stop("stopped at task t1", unknown).model_failure
    assert not InputUnreadableError("x").model_failure  # bad input: exit 1


def test_evaluation_docs_give_the_dead_endpoint_its_exit_status() -> None:
    """Issue 44.7: docs/evaluation.md said a dead endpoint exits 1; it exits 4 (model failure)."""
    from omnilab.bench.endpoint_guard import EndpointDownError

    assert EndpointDownError("down").model_failure
    text = (DOCS.parent / "evaluation.md").read_text(encoding="utf-8")
    bullet = text.split("**A dead endpoint stops the run.**", 1)[1].split("\n- ", 1)[0]
    assert f"exit {int(ExitCode.MODEL_FAILURE)})" in bullet and "exit 1" not in bullet


def test_an_unknown_provider_is_said_before_any_header(video: Path, tmp_path: Path) -> None:
    """Issue 44.22: the question's rule and the run header were printed above the error."""
    proc = omnilab("ask", video, "Which colour is the ball?", "--model", "nope:x", cwd=tmp_path)
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    assert "nope" in proc.stderr and "Which colour is the ball?" not in proc.stdout + proc.stderr
