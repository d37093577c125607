"""The HTTP client and the environment: proxies from HTTP_PROXY/NO_PROXY are honoured (looked up
once per connection pool, not per request) and a ~/.netrc entry for the server's host is never
read into the request (the bearer header is the credential)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from omnilab.models import Message, get_model
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.providers import openai_http

_PROXY_VARS = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy")


@pytest.fixture(autouse=True)
def _no_proxy_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*_PROXY_VARS, "ALL_PROXY", "all_proxy", "NETRC"):
        monkeypatch.delenv(var, raising=False)


def test_requests_go_through_the_proxy_the_environment_names(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake server plays the proxy: a proxied request names the whole target URL.
    monkeypatch.setenv("HTTP_PROXY", server.base_url.rsplit("/v1", 1)[0])
    server.push(reply_text("via proxy"))
    model = get_model("vllm:m@http://omnilab-target.invalid:8000/v1")
    assert model.generate_sync("hi").text == "via proxy"
    assert server.chat_requests[-1].path == "http://omnilab-target.invalid:8000/v1/chat/completions"


def test_no_proxy_exempts_the_host(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server.push(reply_text("direct"))
    assert get_model(f"vllm:m@{server.base_url}").generate_sync("hi").text == "direct"
    assert server.chat_requests[-1].path == "/v1/chat/completions"


def test_a_netrc_entry_for_the_host_does_not_break_requests(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n", encoding="utf-8")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    server.push(reply_text("ok"))
    assert get_model(f"vllm:m@{server.base_url}").generate_sync("hi").text == "ok"
    assert server.chat_requests[-1].headers["authorization"] != "Basic c29tZW9uZTpzZWNyZXQ="


def test_the_proxy_is_looked_up_once_per_pool(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str] = []
    real = openai_http._env_proxy

    def counting(url: str) -> tuple[object, object]:
        looked.append(url)
        return real(url)

    monkeypatch.setattr(openai_http, "_env_proxy", counting)
    model = get_model(f"vllm:m@{server.base_url}")

    async def many() -> None:
        await asyncio.gather(*(model.generate([Message.user(f"q{i}")]) for i in range(8)))

    asyncio.run(many())
    assert len(server.chat_requests) == 8
    assert looked == [f"{server.base_url}/chat/completions"]  # 8 concurrent calls, one pool
