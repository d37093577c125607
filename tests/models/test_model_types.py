"""Content, messages and outputs: validation and lossless JSON round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from omnilab.content import Audio, Content, Document, Image, Text, Video
from omnilab.models import Message, ModelOutput, ToolCall, ToolSpec, Usage

_CONTENT: TypeAdapter[list[Content]] = TypeAdapter(list[Content])


def test_every_content_kind_round_trips_through_json(tmp_path: Path) -> None:
    parts: list[Content] = [
        Text(text="what is said at 0:05?"),
        Image(path=tmp_path / "a.png", box=(0, 0, 10, 20)),
        Image(data=b"\x89PNG\r\n\x00\xff binary", mime_type="image/png"),
        Audio(path=tmp_path / "a.wav", start=1.5, end=3.0),
        Video(path=tmp_path / "v.mp4", start=2.0),
        Document(path=tmp_path / "d.pdf"),
    ]
    text = _CONTENT.dump_json(parts)
    assert b"binary" not in text  # bytes travel as base64
    assert _CONTENT.validate_json(text) == parts


def test_message_round_trip_keeps_tool_calls_and_flags() -> None:
    call = ToolCall(name="search", arguments={"q": "x", "n": [1, 2]}, recovered=True)
    message = Message.assistant("let me look", tool_calls=[call])
    again = Message.model_validate_json(message.model_dump_json())
    assert again == message
    assert again.tool_calls[0].recovered is True


def test_model_output_round_trip() -> None:
    output = ModelOutput.tool_call("search", {"q": "cats"}, text="one moment")
    output = output.model_copy(
        update={
            "reasoning": "I should search",
            "usage": Usage(prompt_tokens=7, completion_tokens=3, reasoning_tokens=2),
            "response_id": "r1",
            "latency_s": 0.25,
        }
    )
    again = ModelOutput.model_validate_json(output.model_dump_json())
    assert again == output
    assert again.text == "one moment"
    assert again.tool_calls[0].name == "search"
    assert again.finish_reason == "tool_calls"


def test_message_content_shorthands() -> None:
    assert Message(role="user", content="hi").content == [Text(text="hi")]
    assert Message(role="user", content=Text(text="hi")).content == [Text(text="hi")]
    m = Message.user("describe", Image(path=Path("x.png")))
    assert [p.type for p in m.content] == ["text", "image"]
    assert m.text == "describe"
    assert Message.tool("call_1", "42").tool_call_id == "call_1"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({}, "needs a path or data"),
        ({"path": "v.mp4", "start": 5.0, "end": 2.0}, "must be after start"),
        ({"path": "v.mp4", "start": -1.0}, "must be >= 0"),
    ],
)
def test_media_content_is_validated(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValidationError, match=needle):
        Video.model_validate(kwargs)


def test_media_name_and_bytes(tmp_path: Path) -> None:
    f = tmp_path / "clip.wav"
    f.write_bytes(b"RIFF....")
    assert Audio(path=f).name == "clip.wav"
    assert Audio(path=f).read_bytes() == b"RIFF...."
    assert Audio(data=b"abc").name == "audio (3 bytes)"
    assert Audio(path=f).guess_mime("x") in ("audio/wav", "audio/x-wav")


def test_usage_adds_up() -> None:
    total = Usage(prompt_tokens=1, completion_tokens=2, cached_tokens=1) + Usage(
        prompt_tokens=10, completion_tokens=20, reasoning_tokens=5
    )
    assert total == Usage(
        prompt_tokens=11, completion_tokens=22, reasoning_tokens=5, cached_tokens=1
    )
    assert total.total_tokens == 33


def test_tool_spec_rejects_bad_names() -> None:
    with pytest.raises(ValidationError):
        ToolSpec(name="has space")
    assert ToolSpec(name="ok_name-1").parameters == {"type": "object", "properties": {}}
