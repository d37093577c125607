"""``omnilab models`` and ``omnilab chat``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from omnilab.cli.models import chat, list_models
from omnilab.models import ModelConfigError, NoModelError, registry
from omnilab.models.fake_server import FakeOpenAIServer, reply_text

# The commands on their own app, so these tests do not depend on every other command importing.
app = typer.Typer()
app.command("models")(list_models)
app.command("chat")(chat)
runner = CliRunner()


def test_models_lists_providers_and_key_status_never_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value-123")
    result = runner.invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert {
        "openai",
        "vllm",
        "sglang",
        "ollama",
        "llamacpp-server",
        "openrouter",
        "deepseek",
        "gemini",
        "local",
        "scripted",
    } <= set(rows)
    assert rows["openai"]["key"] == "set" and rows["openrouter"]["key"] == "missing"
    assert rows["vllm"]["key"] == "optional" and rows["scripted"]["key"] == "none"
    assert rows["ollama"]["base_url"] == "http://localhost:11434/v1"
    assert rows["local"]["capabilities"]["json_schema"] is True

    table = runner.invoke(app, ["models"])
    assert table.exit_code == 0
    assert "OPENAI_API_KEY set" in table.output and "gemini" in table.output
    assert "sk-very-secret" not in result.output + table.output


def test_chat_replays_a_script(data_dir: Path) -> None:
    result = runner.invoke(app, ["chat", "--model", f"scripted:{data_dir / 'hello.json'}", "Hi"])
    assert result.exit_code == 0, result.output
    assert "Hello from the script!" in result.output
    assert "12 prompt + 5 completion tokens" in result.output


def test_chat_json_output(data_dir: Path) -> None:
    result = runner.invoke(
        app, ["chat", "-m", f"scripted:{data_dir / 'script.yaml'}", "Hi", "--json"]
    )
    assert result.exit_code == 0, result.output
    output = json.loads(result.output)
    assert output["reasoning"] == "The user greets me."
    assert output["message"]["content"] == [{"type": "text", "text": "Hi there!"}]


def test_chat_sends_media_to_a_vllm_url(image_file: Path, audio_file: Path) -> None:
    with FakeOpenAIServer() as server:
        server.push(reply_text("a picture and a sound"))
        result = runner.invoke(
            app,
            [
                "chat",
                "--model",
                f"vllm:Qwen/Qwen2.5-Omni-7B@{server.base_url}",
                "What is here?",
                "--image",
                str(image_file),
                "--audio",
                str(audio_file),
                "--system",
                "Be brief.",
                "--max-tokens",
                "50",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "a picture and a sound" in result.output
        body = server.chat_requests[0].body
    assert body["max_tokens"] == 50
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    kinds = [p["type"] for p in body["messages"][1]["content"]]
    assert kinds == ["image_url", "input_audio", "text"]


def test_chat_errors_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    result = runner.invoke(app, ["chat", "--model", "nope:x", "hi"])
    assert isinstance(result.exception, ModelConfigError)
    assert "unknown provider 'nope'" in str(result.exception)

    monkeypatch.setattr(registry, "local_model_available", lambda: False)
    result = runner.invoke(app, ["chat", "hi"])
    assert isinstance(result.exception, NoModelError)
    assert "\n" not in str(result.exception)


def test_missing_media_file_is_a_usage_error() -> None:
    result = runner.invoke(app, ["chat", "-m", "scripted:x.json", "hi", "--image", "nope.png"])
    assert result.exit_code == 2


@pytest.mark.slow
def test_omnilab_chat_local_smollm2_end_to_end() -> None:
    pytest.importorskip("llama_cpp", reason="the [local] extra is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "omnilab", "chat", "--model", "local:smollm2", "Say hello"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert "completion tokens" in done.stderr


def test_omnilab_reports_model_errors_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "omnilab", "chat", "--model", "nope:x", "hi"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown provider 'nope'" in lines[0]
