"""The scripted provider loaded from files, as any command would name it."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnilab.models import ErrorKind, ModelConfigError, ModelError, ToolSpec, Usage, get_model
from omnilab.models.providers import scripted

SEARCH = ToolSpec(
    name="search",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)


def test_json_script_replays_every_short_form(data_dir: Path) -> None:
    model = get_model(f"scripted:{data_dir / 'hello.json'}")
    first = model.generate_sync("hi")
    assert first.text == "Hello from the script!"
    assert first.usage == Usage(prompt_tokens=12, completion_tokens=5)
    call = model.generate_sync("find cats", tools=[SEARCH]).tool_calls[0]
    assert (call.name, call.arguments, call.recovered) == ("search", {"query": "cats"}, False)
    # Two 429s are retried (quick backoff from conftest), then the plain string answers.
    assert model.generate_sync("again").text == "A plain string is a text answer."
    recovered = model.generate_sync("find dogs", tools=[SEARCH]).tool_calls[0]
    assert (recovered.arguments, recovered.recovered) == ({"query": "dogs"}, True)
    assert model.generate_sync("last").text == ""
    assert model.usage.prompt_tokens == 12


def test_yaml_script_with_think_split_and_timeout(data_dir: Path) -> None:
    model = get_model(f"scripted:{data_dir / 'script.yaml'}")
    first = model.generate_sync("hello")
    assert (first.text, first.reasoning) == ("Hi there!", "The user greets me.")
    assert model.generate_sync("next").text == "After the timeout."


def test_bad_scripts_are_one_line_config_errors(tmp_path: Path) -> None:
    cases = {
        "missing.json": None,
        "broken.json": "{not json",
        "shape.json": '{"steps": []}',
        "step.json": '[{"error": 99}]',
        "broken.yaml": "outputs: [unclosed",
    }
    for name, text in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(ModelConfigError) as err:
            get_model(f"scripted:{path}")
        assert str(err.value).startswith(f"model scripted:{path}: ")
        assert "\n" not in str(err.value)


def test_steps_round_trip_through_json() -> None:
    steps = [
        scripted.text("a", reasoning="r"),
        scripted.tool_call("search", {"query": "x"}),
        scripted.error(503, times=2, retry_after=1.5),
        scripted.timeout(seconds=0.5),
        scripted.empty(),
        scripted.malformed_tool_call("search", {"query": "y"}, style="fenced"),
    ]
    again = scripted.parse_steps([s.model_dump(mode="json") for s in steps])
    assert again == steps


def test_error_steps_map_to_kinds() -> None:
    model = scripted.scripted_model([scripted.error(401)])
    with pytest.raises(ModelError) as err:
        model.generate_sync("hi")
    assert err.value.kind is ErrorKind.AUTH and err.value.status == 401


def test_unknown_malformed_style_is_rejected() -> None:
    with pytest.raises(ValueError, match="style must be one of"):
        scripted.malformed_tool_call("search", style="weird")


@pytest.mark.parametrize("repeat", [True, False])
def test_repeat_starts_the_script_again(tmp_path: Path, repeat: bool) -> None:
    """``"repeat": true`` lets one script answer any number of calls (e.g. a judge in an eval)."""
    path = tmp_path / "judge.json"
    path.write_text(f'{{"outputs": ["Correct", "Incorrect"], "repeat": {str(repeat).lower()}}}')
    model = get_model(f"scripted:{path}", max_attempts=1)
    assert [model.generate_sync("q").text for _ in range(2)] == ["Correct", "Incorrect"]
    if repeat:
        assert [model.generate_sync("q").text for _ in range(3)] == [
            "Correct",
            "Incorrect",
            "Correct",
        ]
    else:
        with pytest.raises(ModelError) as err:
            model.generate_sync("q")
        assert err.value.kind is ErrorKind.EXHAUSTED
