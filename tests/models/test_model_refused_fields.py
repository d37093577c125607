"""What llama.cpp servers take for ``response_format``, and a field a server refuses as one line
that is not retried (fast: the fake server plays the real servers' replies)."""

from __future__ import annotations

import pytest

from omnilab.models import ErrorKind, GenerateConfig, ModelError, get_model
from omnilab.models.fake_server import FakeOpenAIServer, reply_error, reply_text

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
# What llama-cpp-python's server answers to {"type": "json_schema"} (HTTP 500, with a traceback).
VALIDATION_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}\n\n"
    '  File "/venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, in '
    "create_chat_completion\n    POST /v1/chat/completions"
)


def test_llamacpp_server_gets_the_schema_in_the_form_both_llama_cpp_servers_read(
    server: FakeOpenAIServer,
) -> None:
    server.push(reply_text('{"ok": true}'))
    model = get_model(f"llamacpp-server:smollm2@{server.base_url}")
    out = model.generate_sync("ok?", config=GenerateConfig(response_format=SCHEMA))
    assert out.text == '{"ok": true}'
    assert server.body()["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_other_providers_keep_the_openai_form(server: FakeOpenAIServer) -> None:
    server.push(reply_text('{"ok": true}'))
    get_model(f"vllm:m@{server.base_url}").generate_sync(
        "ok?", config=GenerateConfig(response_format=SCHEMA)
    )
    assert server.body()["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize(
    ("status", "message"),
    [(500, VALIDATION_500), (400, "response_format type json_schema is not supported")],
)
def test_a_refused_field_is_one_line_with_the_fix_and_not_retried(
    server: FakeOpenAIServer, status: int, message: str
) -> None:
    server.push(reply_error(status, message))
    model = get_model(f"openai:m@{server.base_url}")
    with pytest.raises(ModelError) as err:
        model.generate_sync("ok?", config=GenerateConfig(response_format=SCHEMA))
    line = str(err.value)
    assert err.value.kind is ErrorKind.BAD_REQUEST and err.value.attempts == 1
    assert len(server.chat_requests) == 1
    assert "\n" not in line and "File " not in line
    assert "the server does not take response_format as sent" in line
    assert "llamacpp-server:" in line and '"openai:*" = { json_schema = false }' in line


def test_a_server_failure_without_a_validation_error_is_still_retried(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_S", "0")
    server.push(reply_error(500, "response_format handler crashed"), reply_text('{"ok": true}'))
    model = get_model(f"openai:m@{server.base_url}")
    out = model.generate_sync("ok?", config=GenerateConfig(response_format=SCHEMA))
    assert out.text == '{"ok": true}' and len(server.chat_requests) == 2
