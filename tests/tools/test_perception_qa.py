"""audio_qa / vision_qa: B.4 schemas and prompts, one modality per request, coded errors."""

from __future__ import annotations

import asyncio
import wave
from pathlib import Path
from typing import Any

import pytest

from omnilab.content import Audio, Image, Text, Video
from omnilab.inputs import InputFile, InputSet
from omnilab.media import synth
from omnilab.media.image import load_image
from omnilab.models import Capabilities, Message, Model, RetryPolicy
from omnilab.models.providers.scripted import ScriptedAdapter, error, text
from omnilab.tools import Tool, ToolResult
from omnilab.tools.perception_qa import perception_qa_tools

AUDIO_PROMPT = (
    "You are an audio perception assistant. Answer the question using only the provided audio. "
    "If the audio does not contain enough information, say you cannot determine."
)
VISION_PROMPT = (
    "You are a visual perception assistant. Answer the question using only the provided image "
    "or video. If the visual content does not contain enough information, say you cannot "
    "determine."
)


def perception_model(
    *answers: str, caps: Capabilities | None = None, steps: list[Any] | None = None
) -> tuple[Model, ScriptedAdapter]:
    adapter = ScriptedAdapter(
        steps if steps is not None else [text(a) for a in answers],
        name="scripted:perception",
        capabilities=caps,
    )
    model = Model(adapter, name="scripted:perception", retry=RetryPolicy(max_attempts=1))
    return model, adapter


@pytest.fixture()
def inputs(video: Path, silent_video: Path, audio_file: Path, image_file: Path) -> InputSet:
    return InputSet.from_paths([video, silent_video, audio_file, image_file])


def qa_tools(inputs: InputSet, model: Model, **kw: Any) -> dict[str, Tool]:
    return {t.name: t for t in perception_qa_tools(inputs, model=model, **kw)}


def call(t: Tool, **args: Any) -> ToolResult:
    return asyncio.run(t(args))


def sent(adapter: ScriptedAdapter) -> list[Message]:
    (request,) = adapter.requests
    messages, tools, _ = request
    assert tools == []  # the perception model gets no tools
    return messages


def test_schemas_are_the_papers(inputs: InputSet) -> None:
    model, _ = perception_model()
    got = qa_tools(inputs, model)
    assert got["audio_qa"].spec.model_dump() == {
        "name": "audio_qa",
        "description": "Answer the question using audio from audio_path or video_path.",
        "parameters": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question to answer."},
                "audio_path": {"type": "string", "description": "Audio file path."},
                "video_path": {
                    "type": "string",
                    "description": "Video file path (audio will be used).",
                },
            },
            "required": ["question"],
        },
    }
    assert got["vision_qa"].spec.model_dump() == {
        "name": "vision_qa",
        "description": "Answer the question using visual content from image_path or video_path.",
        "parameters": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question to answer."},
                "image_path": {"type": "string", "description": "Image file path."},
                "video_path": {"type": "string", "description": "Video file path."},
            },
            "required": ["question"],
        },
    }


def test_which_selects_tools_and_rejects_unknown_names(inputs: InputSet) -> None:
    model, _ = perception_model()
    assert list(qa_tools(inputs, model, which=["vision_qa"])) == ["vision_qa"]
    with pytest.raises(ValueError, match="unknown perception tools"):
        perception_qa_tools(inputs, model=model, which=["smell_qa"])


def test_audio_qa_sends_the_b4_prompt_the_audio_and_the_question(inputs: InputSet) -> None:
    model, adapter = perception_model("A rising tone.")
    result = call(
        qa_tools(inputs, model)["audio_qa"], question="What is heard?", audio_path="audio_1"
    )
    assert result.ok, result.error
    assert result.text == "A rising tone."
    assert result.metadata["model"] == "scripted:perception"
    system, user = sent(adapter)
    assert system.role == "system" and system.text == AUDIO_PROMPT
    assert user.role == "user"
    assert [type(p) for p in user.content] == [Audio, Text]
    assert user.content[-1] == Text(text="What is heard?")
    audio = user.content[0]
    assert isinstance(audio, Audio) and audio.path is not None and audio.path.name == "tones.wav"


def test_audio_qa_on_a_video_sends_only_its_audio_track(inputs: InputSet) -> None:
    model, adapter = perception_model("Tones.")
    result = call(qa_tools(inputs, model)["audio_qa"], question="Sound?", video_path="video.mp4")
    assert result.ok, result.error
    _, user = sent(adapter)
    assert [type(p) for p in user.content] == [Audio, Text]
    track = user.content[0]
    assert isinstance(track, Audio) and track.path is not None and track.path.suffix == ".wav"
    with wave.open(str(track.path), "rb") as w:
        assert w.getnframes() / w.getframerate() == pytest.approx(4.0, abs=0.05)


def test_vision_qa_on_an_image_sends_only_the_image(inputs: InputSet, image_file: Path) -> None:
    model, adapter = perception_model("A pattern of blocks.")
    result = call(
        qa_tools(inputs, model)["vision_qa"], question="What is shown?", image_path="image_1"
    )
    assert result.text == "A pattern of blocks."
    system, user = sent(adapter)
    assert system.text == VISION_PROMPT
    assert user.content == [Image(path=image_file.resolve()), Text(text="What is shown?")]


def test_vision_qa_on_a_video_sends_frames_without_sound(inputs: InputSet) -> None:
    caps = Capabilities(image=True, audio=True, video=True, video_frames=4)
    model, adapter = perception_model("Blocks.", caps=caps)
    result = call(qa_tools(inputs, model)["vision_qa"], question="What?", video_path="video_1")
    assert result.ok, result.error
    _, user = sent(adapter)
    assert not any(isinstance(p, Audio | Video) for p in user.content)
    frames = [p for p in user.content if isinstance(p, Image)]
    assert len(frames) == 4
    times = [p.text for p in user.content if isinstance(p, Text) and p.text.startswith("t=")]
    assert len(times) == 4
    for frame in frames:
        assert frame.path is not None
        assert 0 <= synth.read_index(load_image(frame.path)) < 100  # 4 s at 25 fps
    assert user.content[-1] == Text(text="What?")


@pytest.mark.parametrize(
    ("name", "args", "code", "message"),
    [
        (
            "audio_qa",
            {"question": "q", "audio_path": "audio_1", "video_path": "video_1"},
            "INVALID_ARGS",
            "give audio_path or video_path, not both",
        ),
        (
            "audio_qa",
            {"question": "q"},
            "INVALID_ARGS",
            "give audio_path or video_path (valid ids: video_1, video_2, audio_1)",
        ),
        ("audio_qa", {"question": "q", "audio_path": "../tones.wav"}, "UNKNOWN_ID", "valid ids"),
        ("audio_qa", {"question": "q", "audio_path": "image_1"}, "WRONG_KIND", "not an audio"),
        ("audio_qa", {"question": "q", "video_path": "video_2"}, "NO_AUDIO_STREAM", "silent.mp4"),
        ("vision_qa", {"question": "q", "image_path": "/etc/passwd"}, "UNKNOWN_ID", "paths"),
        ("vision_qa", {"question": "q", "video_path": "audio_1"}, "WRONG_KIND", "not a video"),
        ("vision_qa", {"image_path": "image_1"}, "INVALID_ARGS", "'question'"),
    ],
)
def test_bad_requests_never_reach_the_model(
    inputs: InputSet, name: str, args: dict[str, Any], code: str, message: str
) -> None:
    model, adapter = perception_model()
    result = call(qa_tools(inputs, model)[name], **args)
    assert result.error is not None and result.error.code == code, result.error
    assert message in result.error.message
    assert adapter.requests == []


def test_a_model_without_the_modality_is_refused(inputs: InputSet) -> None:
    model, adapter = perception_model(caps=Capabilities(image=True))
    result = call(qa_tools(inputs, model)["audio_qa"], question="q", audio_path="audio_1")
    assert result.error is not None and result.error.code == "UNSUPPORTED"
    assert "scripted:perception does not" in result.error.message
    assert adapter.requests == []


def test_a_failing_perception_model_is_a_coded_error(inputs: InputSet) -> None:
    model, _ = perception_model(steps=[error(500, message="backend exploded")])
    result = call(qa_tools(inputs, model)["vision_qa"], question="q", image_path="image_1")
    assert result.error is not None and result.error.code == "PERCEPTION_FAILED"
    assert result.error.message.startswith("perception model scripted:perception:")
    assert "backend exploded" in result.error.message


def test_a_missing_file_fails_before_the_model_is_called(tmp_path: Path) -> None:
    gone = InputFile(id="image_x", kind="image", path=tmp_path / "x.png", given="x.png")
    model, adapter = perception_model()
    result = call(qa_tools(InputSet([gone]), model)["vision_qa"], question="q", image_path="x.png")
    assert result.error is not None and result.error.code == "NOT_FOUND"
    assert adapter.requests == []
