"""A key goes only where it belongs: a provider's own key only to that provider's own host; any
other base URL only the key configured for it (``models.api_keys."URL"``,
``models.api_key_env."URL"``), else none, and its 401 says how to attach one. Checked on the
wire, against local listeners that record what they were sent, from the library and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.config import get_settings
from omnilab.models import ModelError, get_model
from omnilab.models.fake_server import FakeOpenAIServer, reply_error
from omnilab.models.providers.openai import OpenAIAdapter

SECRET = "sk-users-own-openai-key-0123456789"


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str) -> None:
    config = tmp_path / "omnilab.toml"
    config.write_text(toml)
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    get_settings.cache_clear()


def sent(server: FakeOpenAIServer) -> str:
    return server.chat_requests[-1].headers["authorization"]


def test_the_environments_key_never_reaches_another_url(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("VLLM_API_KEY", SECRET + "-vllm")
    for name in (f"openai:gpt-4o@{server.base_url}", f"vllm:m@{server.base_url}"):
        assert get_model(name).generate_sync("hi").text == "ok"
        assert sent(server) == "Bearer EMPTY"
        assert SECRET not in json.dumps([dict(r.headers) for r in server.chat_requests])


def test_the_providers_own_host_gets_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("VLLM_API_KEY", "vllm-key-0123456789")
    for name, key in [
        ("openai:gpt-4o", SECRET),
        ("openai:gpt-4o@https://API.openai.com:443/v1/", SECRET),
        ("vllm:m", "vllm-key-0123456789"),  # its default, http://localhost:8000/v1
        ("vllm:m@http://localhost:8000/v1", "vllm-key-0123456789"),
        ("openai:gpt-4o@http://api.openai.com/v1", None),  # another scheme is another host
        ("openai:gpt-4o@https://api.openai.com.evil.example/v1", None),
        ("vllm:m@http://localhost:8001/v1", None),
    ]:
        adapter = get_model(name).adapter
        assert isinstance(adapter, OpenAIAdapter)
        assert adapter.secrets == ((key,) if key else ()), name


def test_a_key_configured_for_the_url_is_sent_there_only(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_GPU_KEY", "gpu-key-from-env-0123")
    root = server.base_url.removesuffix("/v1")
    configure(
        tmp_path,
        monkeypatch,
        f'[models.api_keys]\n"{root}" = "gpu-key-literal-0123"\n'
        f'"http://127.0.0.1:1/v1" = "other-port-key"\n',
    )
    get_model(f"openai:gpt-4o@{server.base_url}").generate_sync("hi")
    assert sent(server) == "Bearer gpu-key-literal-0123"  # an entry covers paths under it
    # An environment-variable entry for the same URL, more specific, wins.
    configure(
        tmp_path,
        monkeypatch,
        f'[models.api_keys]\n"{root}" = "gpu-key-literal-0123"\n'
        f'[models.api_key_env]\n"{server.base_url}" = "MY_GPU_KEY"\n',
    )
    get_model(f"vllm:m@{server.base_url}").generate_sync("hi")
    assert sent(server) == "Bearer gpu-key-from-env-0123"
    # Another path on the same host is not under the entry: no key.
    configure(tmp_path, monkeypatch, f'[models.api_keys]\n"{root}/v1" = "gpu-key-0123"\n')
    assert get_model(f"vllm:m@{root}/other/v1").adapter.secrets == ()
    assert get_model(f"vllm:m@{root}/v1/").adapter.secrets == ("gpu-key-0123",)


def test_a_401_from_another_url_says_how_to_attach_a_key(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.push(reply_error(401, "Unauthorized"))
    with pytest.raises(ModelError) as err:
        get_model(f"openai:gpt-4o@{server.base_url}").generate_sync("hi")
    message = str(err.value)
    assert "\n" not in message and SECRET not in message
    assert f'models.api_keys."{server.base_url}"' in message
    assert "the provider's own key goes only to its own host" in message


def test_the_cli_sends_no_key_to_a_typod_url(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer

    from omnilab.cli.models import chat, list_models

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    app = typer.Typer()
    app.command("chat")(chat)
    app.command("models")(list_models)
    result = CliRunner().invoke(app, ["chat", "--model", f"openai:gpt-4o@{server.base_url}", "Hi"])
    assert result.exit_code == 0, result.output
    assert sent(server) == "Bearer EMPTY"
