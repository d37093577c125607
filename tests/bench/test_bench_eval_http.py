"""``omnilab eval`` against a local OpenAI-compatible server: the task concurrency reaches the
server (the per-endpoint limit is lifted), samples are separate calls while a resumed run
repeats none, the reply cache can be turned off, the run header, ``--show-prompt``, a dead
endpoint, runs whose every task failed before the model, and ``compare`` on unequal failures."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.bench import BenchError
from omnilab.bench.run_dir import RunDir
from omnilab.cli.main import app
from omnilab.models.fake_server import FakeOpenAIServer, _Handler, _Server, reply_text

runner = CliRunner()


class CountingServer(FakeOpenAIServer):
    """The fake server, counting the chat requests in flight and the most at once."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.in_flight = 0
        self.peak = 0
        self._count = threading.Lock()

    def __enter__(self) -> CountingServer:
        server = self

        class Counting(_Handler):
            server_ref = server

            def do_POST(self) -> None:
                with server._count:
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                try:
                    super().do_POST()
                finally:
                    with server._count:
                        server.in_flight -= 1

        self._httpd = _Server(("127.0.0.1", 0), Counting)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self


def write_tasks(folder: Path, n: int, *, files: list[str] | None = None) -> Path:
    path = folder / "tasks.jsonl"
    lines = [
        json.dumps(
            {"id": f"q{i}", "question": f"Fresh question {i}?", "answer": "blue"}
            | ({"files": files} if files else {})
        )
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


def ok(*args: str | Path) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, (result.output, result.exception)
    return str(result.output)


def eval_args(data: Path, url: str, out: Path, *extra: str) -> list[str | Path]:
    return [
        "eval", "jsonl", "--data", data, "--model", f"vllm:test@{url}", "--scorer",
        "answer_set", "--out", out, "--no-progress", *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_concurrency_64_keeps_64_requests_in_flight_with_default_settings(
    tmp_path: Path,
) -> None:
    data = write_tasks(tmp_path, 192)
    with CountingServer(latency_s=0.3, default=reply_text("<answer>blue</answer>")) as server:
        output = ok(*eval_args(data, server.base_url, tmp_path / "run", "--concurrency", "64"))
    asked = [
        str(server.body(i)["messages"][-1]["content"]) for i in range(len(server.chat_requests))
    ]
    unasked = [
        (r.task_id, r.error, r.model_calls, r.usage.cached_tokens)
        for r in RunDir(tmp_path / "run").results()
        if not any(f"question {r.task_id[1:]}?" in text for text in asked)
    ]
    assert len(server.chat_requests) == 192, (unasked, output[-800:])
    assert server.peak >= 60, server.peak  # not the default per-endpoint limit of 16
    assert "up to 64 model calls per endpoint (lifted to the task concurrency)" in output


def test_an_explicit_endpoint_limit_stays_and_the_header_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_MODELS__CONCURRENCY", "2")
    data = write_tasks(tmp_path, 12)
    with CountingServer(latency_s=0.1, default=reply_text("<answer>blue</answer>")) as server:
        output = ok(*eval_args(data, server.base_url, tmp_path / "run", "--concurrency", "8"))
    # The server counts a request until its handler returns, just after the reply is sent, so
    # the client's next request may overlap the end of the last by one; without the limit of 2
    # all 8 tasks would be in flight.
    assert server.peak <= 3, server.peak
    assert "warning: effective concurrency 2, not 8" in output


def test_samples_are_separate_calls_and_a_resumed_run_repeats_none(tmp_path: Path) -> None:
    data = write_tasks(tmp_path, 1)
    out = tmp_path / "run"
    sampling = ["-O", 'generate={"temperature": 0.8}']
    with CountingServer(default=reply_text("<answer>blue</answer>")) as server:
        output = ok(*eval_args(data, server.base_url, out, "--samples", "2", *sampling))
        assert len(server.chat_requests) == 2
        seeds = {server.body(i)["seed"] for i in range(2)}
        assert len(seeds) == 2 and all(server.body(i)["temperature"] == 0.8 for i in range(2))
        assert "2 samples per task: mean Pass@1 100.0%" in output and "pass@2 100.0%" in output
        ok("eval", "--out", out, "--resume", "--no-progress")
        assert len(server.chat_requests) == 2  # nothing left, nothing asked
        ok("eval", "--out", out, "--resume", "--samples", "3", "--no-progress")
        assert len(server.chat_requests) == 3  # only the new sample
    assert sorted(r.key for r in RunDir(out).results()) == [("q0", 0), ("q0", 1), ("q0", 2)]


def test_the_cache_reuses_replies_unless_turned_off(tmp_path: Path) -> None:
    data = write_tasks(tmp_path, 2)
    with CountingServer(default=reply_text("<answer>blue</answer>")) as server:
        first = ok(*eval_args(data, server.base_url, tmp_path / "a"))
        assert "reply cache on" in first and len(server.chat_requests) == 2
        ok(*eval_args(data, server.base_url, tmp_path / "b"))
        assert len(server.chat_requests) == 2  # the same requests: answered from the cache
        off = ok(*eval_args(data, server.base_url, tmp_path / "c", "--no-cache"))
        assert "reply cache off" in off and len(server.chat_requests) == 4
    assert RunDir(tmp_path / "c").read_config().cache is False


def test_the_header_is_printed_and_recorded(tmp_path: Path) -> None:
    data = write_tasks(tmp_path, 3)
    with CountingServer(default=reply_text("<answer>blue</answer>")) as server:
        output = ok(*eval_args(data, server.base_url, tmp_path / "run", "-c", "2"))
    assert "agent tir, mode native (picked from the model's capability flags)" in output
    assert "dataset tasks.jsonl (adapter jsonl), 3 tasks" in output
    assert "warning: vllm:test@" in output and "no known capability flags" in output
    header = RunDir(tmp_path / "run").read_config().header
    assert header is not None and header["tasks"] == 3 and header["concurrency"] == 2


def test_show_prompt_prints_the_first_prompt_without_calling_the_model(
    tmp_path: Path, image_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_tasks(tmp_path, 2, files=[str(image_file)])
    out = tmp_path / "run"
    with CountingServer() as server:
        root = ("--media-root", str(image_file.parent))
        output = ok(*eval_args(data, server.base_url, out, "--show-prompt", *root))
        # A judged scorer needs no judge for a preview: nothing is scored.
        args = eval_args(data, server.base_url, out, "--show-prompt", *root)
        args[args.index("answer_set")] = "omnigaia"
        monkeypatch.delenv("OMNILAB_BENCH__JUDGE_MODEL", raising=False)
        assert ok(*args).startswith("first prompt of task q0")
        assert server.chat_requests == []
    assert output.startswith("first prompt of task q0 to vllm:test@")
    assert "--- system ---" in output and "Fresh question 0?" in output
    assert "--- tools ---" in output and "read_image" in output
    assert str(image_file.parent) not in output  # media by name, never a host path
    assert not out.exists()


def test_show_prompt_prints_dataset_text_inert(tmp_path: Path) -> None:
    """Issue 42: a dataset's question with OSC sequences (window title, clipboard) and a
    bidirectional override is shown as visible escapes, never sent to the terminal raw."""
    path = tmp_path / "tasks.jsonl"
    hostile = "Q \x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07 \u202eevil?"
    path.write_text(json.dumps({"id": "q0", "question": hostile, "answer": "x"}) + "\n")
    with CountingServer() as server:
        output = ok(*eval_args(path, server.base_url, tmp_path / "run", "--show-prompt"))
    assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
    assert "\\x1b]0;pwned\\x07" in output and "\\u202eevil?" in output


def test_a_dead_endpoint_stops_with_one_line_and_a_resume_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_MODELS__MAX_ATTEMPTS", "1")
    data = write_tasks(tmp_path, 8)
    with CountingServer() as server:
        url = server.base_url  # a port nobody listens on once the server stops
    out = tmp_path / "run"
    result = invoke(*eval_args(data, url, out, "-c", "1"))
    assert result.exit_code != 0
    message = str(result.exception)
    assert "3 tasks in a row failed to connect" in message and "\n" not in message
    assert f"omnilab eval --out {out} --resume" in message
    assert RunDir(out).results() == []  # nothing marked failed: a resume runs every task


def test_an_eval_whose_tasks_all_fail_before_the_model_exits_non_zero(tmp_path: Path) -> None:
    data = write_tasks(tmp_path, 3, files=[str(tmp_path / "gone.png")])
    with CountingServer() as server:
        result = invoke(*eval_args(data, server.base_url, tmp_path / "run"))
        assert server.chat_requests == []
    assert isinstance(result.exception, BenchError), result.output
    assert "all 3 tasks run failed before any model call" in str(result.exception)
    assert "missing media" in str(result.exception)


def test_compare_refuses_runs_with_unequal_failures(tmp_path: Path) -> None:
    def results(name: str, failed: set[str]) -> Path:
        path = tmp_path / f"{name}.jsonl"
        rows = []
        for i in range(4):
            tid = f"q{i}"
            row: dict[str, Any] = {"task_id": tid, "prediction": "blue"}
            if tid in failed:
                row |= {"error": "timeout: no answer within 5 s"}
            else:
                row |= {"score": {"scorer": "x", "value": 1.0, "correct": True}}
            rows.append(json.dumps(row))
        path.write_text("\n".join(rows) + "\n")
        return path

    a, b = results("a", {"q1", "q2"}), results("b", set())
    result = invoke("compare", a, b)
    assert isinstance(result.exception, BenchError)
    assert "unequal failures: 2 failed in a only (q1, q2)" in str(result.exception)
    assert "--allow-failed" in str(result.exception)
    output = ok("compare", a, b, "--allow-failed")
    assert "warning: unequal failures" in output and "McNemar" in output
    ok("compare", b, b)


def test_ask_prints_the_header_with_the_text_only_warning(tmp_path: Path, image_file: Path) -> None:
    with CountingServer(default=reply_text("<answer>blue</answer>")) as server:
        output = ok(
            "ask", image_file, "What colour?", "-m", f"vllm:test@{server.base_url}",
            "--out", tmp_path / "ask",
        )  # fmt: skip
    assert "agent tir, mode evidence (picked from the model's capability flags)" in output
    assert "warning: vllm:test@" in output and "runs text-only" in output
    assert '"vllm:test" = {image = true' in output
