"""Structured output (``response_format``) and token logprobs, per provider."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from omnilab.models import (
    ErrorKind,
    GenerateConfig,
    ModelError,
    ResponseFormat,
    TokenLogprob,
    TopLogprob,
    get_model,
)
from omnilab.models.fake_server import FakeOpenAIServer, reply_text, token_logprobs
from omnilab.models.providers.scripted import scripted_model, text
from omnilab.models.types import ModelOutput

ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["answer", "confidence"],
}


class Verdict(BaseModel):
    correct: bool
    reason: str


def test_response_format_accepts_a_schema_a_model_class_or_the_full_form() -> None:
    bare = GenerateConfig(response_format=ANSWER).response_format
    assert bare == ResponseFormat(json_schema=ANSWER)
    typed = GenerateConfig(response_format=Verdict).response_format
    assert typed is not None and typed.name == "Verdict"
    assert typed.json_schema["required"] == ["correct", "reason"]
    full = GenerateConfig(response_format={"json_schema": ANSWER, "name": "a", "strict": True})
    assert full.response_format == ResponseFormat(json_schema=ANSWER, name="a", strict=True)
    # Round-trips through JSON (trajectories and caches store configs).
    again = GenerateConfig.model_validate_json(full.model_dump_json())
    assert again == full


def test_top_logprobs_implies_logprobs_and_is_bounded() -> None:
    assert GenerateConfig(top_logprobs=3).logprobs is True
    assert GenerateConfig().logprobs is False
    with pytest.raises(ValidationError):
        GenerateConfig(top_logprobs=21)


def test_openai_sends_json_schema_response_format(server: FakeOpenAIServer) -> None:
    server.push(reply_text('{"answer": "Paris", "confidence": 0.9}'))
    model = get_model(f"vllm:qwen@{server.base_url}")
    out = model.generate_sync("Capital of France?", config=GenerateConfig(response_format=ANSWER))
    assert json.loads(out.text) == {"answer": "Paris", "confidence": 0.9}
    body = server.body()
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": ANSWER, "strict": False},
    }
    assert body["messages"] == [{"role": "user", "content": "Capital of France?"}]


def test_without_the_json_schema_flag_the_schema_goes_in_the_prompt(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_MODELS__CAPABILITIES", '{"vllm:plain": {"json_schema": false}}')
    from omnilab.config import get_settings

    get_settings.cache_clear()
    model = get_model(f"vllm:plain@{server.base_url}")
    assert not model.capabilities.json_schema
    model.generate_sync("Capital?", config=GenerateConfig(response_format=ANSWER))
    body = server.body()
    assert "response_format" not in body
    system = body["messages"][0]
    assert system["role"] == "system" and json.dumps(ANSWER) in system["content"]


def test_openai_logprobs_are_asked_for_and_returned(server: FakeOpenAIServer) -> None:
    server.push(
        reply_text(
            "Hi!",
            logprobs=token_logprobs(
                ("Hi", -0.25), ("!", -1.5), top=[[("Hi", -0.25), ("Hello", -1.75)], [("!", -1.5)]]
            ),
        )
    )
    model = get_model(f"vllm:qwen@{server.base_url}")
    out = model.generate_sync("Greet me", config=GenerateConfig(logprobs=True, top_logprobs=2))
    body = server.body()
    assert (body["logprobs"], body["top_logprobs"]) == (True, 2)
    assert out.logprobs == [
        TokenLogprob(
            token="Hi",
            logprob=-0.25,
            top_logprobs=[
                TopLogprob(token="Hi", logprob=-0.25),
                TopLogprob(token="Hello", logprob=-1.75),
            ],
        ),
        TokenLogprob(token="!", logprob=-1.5, top_logprobs=[TopLogprob(token="!", logprob=-1.5)]),
    ]
    # Kept through JSON, as the trajectory stores outputs.
    assert ModelOutput.model_validate_json(out.model_dump_json()).logprobs == out.logprobs


def test_logprobs_are_not_asked_for_by_default(server: FakeOpenAIServer) -> None:
    out = get_model(f"vllm:qwen@{server.base_url}").generate_sync("hi")
    assert "logprobs" not in server.body() and "top_logprobs" not in server.body()
    assert out.logprobs is None


def test_scripted_honours_the_response_format() -> None:
    model = scripted_model([text('{"correct": true, "reason": "same city"}')])
    out = model.generate_sync("judge", config=GenerateConfig(response_format=Verdict))
    assert Verdict.model_validate_json(out.text) == Verdict(correct=True, reason="same city")


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        ("Correct", "the answer is not JSON"),
        ('{"correct": "yes", "reason": "x"}', "does not match the schema at correct"),
        ('{"reason": "x"}', "'correct' is a required property"),
    ],
)
def test_scripted_refuses_an_answer_that_breaks_the_format(answer: str, needle: str) -> None:
    model = scripted_model([text(answer)])
    with pytest.raises(ModelError) as err:
        model.generate_sync("judge", config=GenerateConfig(response_format=Verdict))
    assert err.value.kind is ErrorKind.BAD_RESPONSE
    message = str(err.value)
    assert "breaks the response format" in message and needle in message
    assert "\n" not in message


def test_scripted_returns_logprobs_only_when_asked() -> None:
    logprobs = [TokenLogprob(token="ok", logprob=-0.1)]
    step = text("ok")
    step = step.model_copy(update={"output": step.output.model_copy(update={"logprobs": logprobs})})
    asked = scripted_model([step]).generate_sync("x", config=GenerateConfig(logprobs=True))
    assert asked.logprobs == logprobs
    plain = scripted_model([step]).generate_sync("x")
    assert plain.logprobs is None
