"""The OpenAI-compatible adapter against a real local HTTP server: wire format, faults, usage."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from omnilab.models import (
    ErrorKind,
    GenerateConfig,
    Message,
    ModelCallEvent,
    ModelConfigError,
    ModelError,
    ToolCall,
    ToolSpec,
    Usage,
    get_model,
)
from omnilab.models.fake_server import (
    FakeOpenAIServer,
    reply_error,
    reply_raw,
    reply_text,
    reply_tool_calls,
)

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def test_text_request_and_response(server: FakeOpenAIServer) -> None:
    server.push(reply_text("Hello!", prompt_tokens=12, completion_tokens=3))
    model = get_model(f"vllm:Qwen/Qwen3-8B@{server.base_url}")
    config = GenerateConfig(temperature=0.1, max_tokens=64, seed=7, stop=["END"])
    out = model.generate_sync([Message.system("Be brief."), Message.user("Hi")], config=config)
    assert out.text == "Hello!"
    assert (out.finish_reason, out.response_id) == ("stop", "chatcmpl-fake")
    body = server.body()
    assert body["model"] == "Qwen/Qwen3-8B"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert (body["temperature"], body["max_tokens"], body["seed"], body["stop"]) == (
        0.1,
        64,
        7,
        ["END"],
    )
    assert "tools" not in body
    assert server.chat_requests[-1].headers["authorization"] == "Bearer EMPTY"


def test_tools_tool_choice_and_extra_body_on_the_wire(server: FakeOpenAIServer) -> None:
    server.push(reply_tool_calls(("get_weather", {"city": "Paris"})))
    model = get_model(f"sglang:qwen@{server.base_url}")
    config = GenerateConfig(
        tool_choice="get_weather",
        extra_body={"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20},
    )
    out = model.generate_sync("Weather in Paris?", tools=[WEATHER], config=config)
    assert out.tool_calls == [
        ToolCall(id="call_0", name="get_weather", arguments={"city": "Paris"})
    ]
    body = server.body()
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather in a city.",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["top_k"] == 20


def test_tool_history_goes_back_in_openai_form(server: FakeOpenAIServer) -> None:
    call = ToolCall(id="call_7", name="get_weather", arguments={"city": "Oslo"})
    history = [
        Message.user("Weather in Oslo?"),
        Message.assistant(tool_calls=[call]),
        Message.tool("call_7", "-3 °C, snow"),
    ]
    get_model(f"vllm:m@{server.base_url}").generate_sync(history, tools=[WEATHER])
    wire = server.body()["messages"]
    assert wire[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert wire[2] == {"role": "tool", "tool_call_id": "call_7", "content": "-3 °C, snow"}


def test_reasoning_content_and_think_blocks_are_captured(server: FakeOpenAIServer) -> None:
    server.push(
        reply_text("42", reasoning_content="6 times 7", reasoning_tokens=4),
        reply_text("<think>\nadd them\n</think>\n\n5"),
    )
    model = get_model(f"vllm:deepseek-ai/DeepSeek-R1@{server.base_url}")
    first = model.generate_sync("6*7?")
    assert (first.text, first.reasoning, first.usage.reasoning_tokens) == ("42", "6 times 7", 4)
    second = model.generate_sync("2+3?")
    assert (second.text, second.reasoning) == ("5", "add them")


def test_text_tool_calls_from_open_models_are_recovered(server: FakeOpenAIServer) -> None:
    server.push(
        reply_text(
            'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
        ),
        reply_text('<tool_call>{"name": "launch_rockets", "arguments": {}}</tool_call>'),
    )
    model = get_model(f"vllm:m@{server.base_url}")
    out = model.generate_sync("Weather in Rome?", tools=[WEATHER])
    assert [(c.name, c.arguments, c.recovered) for c in out.tool_calls] == [
        ("get_weather", {"city": "Rome"}, True)
    ]
    assert out.text == "Checking."
    undeclared = model.generate_sync("Do it", tools=[WEATHER])
    assert undeclared.tool_calls == [] and "launch_rockets" in undeclared.text


def test_malformed_native_arguments_are_flagged_not_invented(server: FakeOpenAIServer) -> None:
    server.push(
        reply_tool_calls(("get_weather", '{"city": "Par'), ("get_weather", '{"city": "Nice"'))
    )
    out = get_model(f"vllm:m@{server.base_url}").generate_sync("?", tools=[WEATHER])
    broken, closed = out.tool_calls
    assert broken.arguments == {} and broken.parse_error is not None
    assert (closed.arguments, closed.recovered, closed.parse_error) == (
        {"city": "Nice"},
        True,
        None,
    )


def test_model_without_native_tools_gets_them_in_the_prompt(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.config import get_settings

    config = tmp_path / "omnilab.toml"
    config.write_text('[models.capabilities]\n"llamacpp-server:*" = { tool_calls = false }\n')
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    get_settings.cache_clear()
    get_model(f"llamacpp-server:m@{server.base_url}").generate_sync("?", tools=[WEATHER])
    body = server.body()
    assert "tools" not in body
    assert body["messages"][0]["role"] == "system"
    assert (
        "<tool_call>" in body["messages"][0]["content"]
        and "get_weather" in body["messages"][0]["content"]
    )


def test_retries_429_and_500_honouring_retry_after(server: FakeOpenAIServer) -> None:
    events: list[ModelCallEvent] = []
    server.push(
        reply_error(429, "slow down", retry_after=0.3),
        reply_error(500, "boom"),
        reply_text("finally", prompt_tokens=30, completion_tokens=7),
    )
    model = get_model(f"vllm:m@{server.base_url}", sink=events.append)
    t0 = time.perf_counter()
    out = model.generate_sync("hi")
    assert out.text == "finally"
    assert time.perf_counter() - t0 >= 0.3
    assert len(server.chat_requests) == 3
    assert events[0].attempts == 3
    assert model.usage == Usage(prompt_tokens=30, completion_tokens=7)  # billed once


def test_usage_totals_add_up_over_calls(server: FakeOpenAIServer) -> None:
    server.push(
        reply_text("a", prompt_tokens=10, completion_tokens=2, cached_tokens=4),
        reply_error(503),
        reply_text("b", prompt_tokens=20, completion_tokens=3, reasoning_tokens=1),
    )
    model = get_model(f"vllm:m@{server.base_url}")
    model.generate_sync("one")
    model.generate_sync("two")
    assert model.usage == Usage(
        prompt_tokens=30, completion_tokens=5, reasoning_tokens=1, cached_tokens=4
    )
    assert model.calls == 2


def test_timeout_is_retried_then_reported(server: FakeOpenAIServer) -> None:
    server.push(reply_text("late", delay_s=2.0), reply_text("late", delay_s=2.0))
    model = get_model(f"vllm:m@{server.base_url}", timeout_s=0.2, max_attempts=2)
    t0 = time.perf_counter()
    with pytest.raises(ModelError) as err:
        model.generate_sync("hi")
    assert time.perf_counter() - t0 < 1.8
    assert err.value.kind is ErrorKind.TIMEOUT
    assert "no answer within 0.2 s after 2 attempts; raise models.timeout_s" in str(err.value)


def test_cache_hit_sends_no_second_request(server: FakeOpenAIServer) -> None:
    model = get_model(f"vllm:m@{server.base_url}", cache=True)
    first = model.generate_sync("cache me")
    second = model.generate_sync("cache me")
    assert len(server.chat_requests) == 1
    assert second.cached and second.text == first.text
    from omnilab.config import get_settings

    assert model.cache is not None
    model.cache.flush()  # stores are written behind
    assert (get_settings().cache_dir / "models" / "responses.sqlite3").is_file()


@pytest.mark.parametrize(
    ("reply", "kind", "needle"),
    [
        (
            reply_raw("<html>502 Bad Gateway</html>"),
            ErrorKind.BAD_RESPONSE,
            "did not return a chat completion",
        ),
        (
            reply_error(401, "invalid key"),
            ErrorKind.AUTH,
            "needs an API key (invalid key); set models.api_keys.",
        ),
        (
            reply_error(404, "no such model"),
            ErrorKind.NOT_FOUND,
            "HTTP 404: no such model; check the model name",
        ),
        (
            reply_error(400, "max_tokens too large"),
            ErrorKind.BAD_REQUEST,
            "HTTP 400: max_tokens too large",
        ),
    ],
)
def test_bad_answers_are_one_line_errors(
    server: FakeOpenAIServer, reply: Any, kind: ErrorKind, needle: str
) -> None:
    server.push(reply)
    name = f"vllm:m@{server.base_url}"
    with pytest.raises(ModelError) as err:
        get_model(name).generate_sync("hi")
    message = str(err.value)
    assert message.startswith(f"model {name}: ")
    assert needle in message and "\n" not in message
    assert err.value.kind is kind
    assert len(server.chat_requests) == 1  # none of these is retried


def test_unreachable_server_says_what_to_check() -> None:
    with FakeOpenAIServer() as gone:
        url = gone.base_url
    with pytest.raises(ModelError) as err:
        get_model(f"vllm:m@{url}", max_attempts=2).generate_sync("hi")
    message = str(err.value)
    assert f"cannot connect to {url}" in message and "after 2 attempts" in message
    assert "is the server running?" in message and "\n" not in message


def key_for(url: str, var: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attach the key in ``$var`` to ``url`` (``models.api_key_env``), as a user of a server of
    their own does: a provider's own key goes only to its own host."""
    from omnilab.config import get_settings

    monkeypatch.setenv("OMNILAB_MODELS__API_KEY_ENV", f'{{"{url}": "{var}"}}')
    get_settings.cache_clear()


def test_key_is_sent_but_never_shown(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-abcdefghijklmnop"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    key_for(server.base_url, "OPENAI_API_KEY", monkeypatch)
    server.push(reply_error(401, f"Incorrect API key provided: {key}"))
    events: list[ModelCallEvent] = []
    with pytest.raises(ModelError) as err:
        get_model(f"openai:gpt-4o@{server.base_url}", sink=events.append).generate_sync("hi")
    assert server.chat_requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in str(err.value) and key not in events[0].model_dump_json()
    assert key[:8] not in str(err.value)


def test_openai_at_a_server_of_ones_own_needs_no_key(server: FakeOpenAIServer) -> None:
    # vLLM and SGLang servers usually run without authentication.
    model = get_model(f"openai:Qwen/Qwen3-8B@{server.base_url}")
    assert model.generate_sync("hi").text == "ok"
    assert server.chat_requests[-1].headers["authorization"] == "Bearer EMPTY"


def test_a_401_without_a_key_says_a_key_is_needed(server: FakeOpenAIServer) -> None:
    server.push(reply_error(401, "Unauthorized"))
    name = f"openai:gpt-4o@{server.base_url}"
    with pytest.raises(ModelError) as err:
        get_model(name).generate_sync("hi")
    assert err.value.kind is ErrorKind.AUTH
    assert str(err.value) == (
        f"model {name}: HTTP 401: {server.base_url} needs an API key (Unauthorized); "
        f'set models.api_keys."{server.base_url}" = "KEY", or '
        f'models.api_key_env."{server.base_url}" = "VARIABLE" in omnilab.toml '
        "(the provider's own key goes only to its own host)"
    )
    assert len(server.chat_requests) == 1  # not retried


def test_a_401_with_a_key_says_to_check_it(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sk-wrong-key-123456")
    key_for(server.base_url, "VLLM_API_KEY", monkeypatch)
    server.push(reply_error(401, "invalid key"))
    with pytest.raises(ModelError) as err:
        get_model(f"vllm:m@{server.base_url}").generate_sync("hi")
    message = str(err.value)
    assert "HTTP 401: invalid key; check the API key" in message
    assert "sk-wrong" not in message
    assert server.chat_requests[-1].headers["authorization"] == "Bearer sk-wrong-key-123456"


def test_the_providers_own_service_still_needs_a_key() -> None:
    for name in ("openai:gpt-4o", "openai:gpt-4o@https://api.openai.com/v1/"):
        with pytest.raises(ModelConfigError, match="needs an API key; set OPENAI_API_KEY"):
            get_model(name)


def test_a_prompt_too_long_for_the_server_is_a_context_error(server: FakeOpenAIServer) -> None:
    server.push(
        reply_error(
            400,
            "This model's maximum context length is 8192 tokens. However, you requested 9000 "
            "tokens.",
        )
    )
    with pytest.raises(ModelError) as err:
        get_model(f"vllm:m@{server.base_url}").generate_sync("long")
    assert err.value.kind is ErrorKind.CONTEXT_LENGTH
    assert "does not fit the model's context (This model's maximum context length is 8192" in str(
        err.value
    )
