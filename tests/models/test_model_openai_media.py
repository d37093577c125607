"""Media through the OpenAI-compatible adapter: what each capability flag puts on the wire."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from omnilab.content import Audio, Document, Image, Video
from omnilab.models import ErrorKind, Message, ModelError, ToolCall, get_model
from omnilab.models.fake_server import FakeOpenAIServer, reply_error


def _decode_data_url(url: str) -> tuple[str, bytes]:
    head, _, payload = url.partition(",")
    return head.removeprefix("data:").removesuffix(";base64"), base64.b64decode(payload)


def test_image_goes_as_a_data_url(server: FakeOpenAIServer, image_file: Path) -> None:
    model = get_model(f"vllm:Qwen/Qwen2.5-VL-7B@{server.base_url}")
    model.generate_sync([Message.user("What is this?", Image(path=image_file))])
    content = server.body()["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "What is this?"}
    mime, data = _decode_data_url(content[1]["image_url"]["url"])
    assert content[1]["type"] == "image_url"
    assert (mime, data) == ("image/png", image_file.read_bytes())


def test_cropped_image_is_cut_before_sending(server: FakeOpenAIServer, image_file: Path) -> None:
    import io

    from PIL import Image as PILImage

    model = get_model(f"vllm:llava-1.6@{server.base_url}")
    model.generate_sync([Message.user(Image(path=image_file, box=(10, 20, 110, 70)))])
    _, data = _decode_data_url(server.body()["messages"][0]["content"][0]["image_url"]["url"])
    with PILImage.open(io.BytesIO(data)) as im:
        assert im.size == (100, 50)


def test_audio_goes_as_input_audio(server: FakeOpenAIServer, audio_file: Path) -> None:
    model = get_model(f"vllm:Qwen/Qwen2.5-Omni-7B@{server.base_url}")
    model.generate_sync([Message.user(Audio(path=audio_file), "Transcribe.")])
    part = server.body()["messages"][0]["content"][0]
    assert part["type"] == "input_audio"
    assert part["input_audio"]["format"] == "wav"
    assert base64.b64decode(part["input_audio"]["data"]) == audio_file.read_bytes()


def test_audio_range_is_cut_to_16k_wav(server: FakeOpenAIServer, audio_file: Path) -> None:
    import io
    import wave

    model = get_model(f"vllm:Qwen/Qwen2.5-Omni-7B@{server.base_url}")
    model.generate_sync([Message.user(Audio(path=audio_file, start=0.5, end=1.5))])
    part = server.body()["messages"][0]["content"][0]
    with wave.open(io.BytesIO(base64.b64decode(part["input_audio"]["data"]))) as w:
        assert w.getframerate() == 16_000
        assert abs(w.getnframes() / 16_000 - 1.0) < 0.01


def test_video_goes_as_video_url_to_omni_servers(server: FakeOpenAIServer, video: Path) -> None:
    model = get_model(f"vllm:Qwen/Qwen2.5-Omni-7B@{server.base_url}")
    model.generate_sync([Message.user(Video(path=video), "What happens?")])
    part = server.body()["messages"][0]["content"][0]
    assert part["type"] == "video_url"
    mime, data = _decode_data_url(part["video_url"]["url"])
    assert (mime, data) == ("video/mp4", video.read_bytes())


def test_video_range_to_omni_servers_is_cut_to_a_clip(
    server: FakeOpenAIServer, video: Path, tmp_path: Path
) -> None:
    from omnilab.media import probe

    model = get_model(f"vllm:Qwen/Qwen2.5-Omni-7B@{server.base_url}")
    model.generate_sync([Message.user(Video(path=video, start=1.0, end=2.5))])
    _, data = _decode_data_url(server.body()["messages"][0]["content"][0]["video_url"]["url"])
    sent = tmp_path / "sent.mp4"
    sent.write_bytes(data)
    info = probe(sent)
    assert abs((info.duration or 0) - 1.5) < 0.15 and info.has_audio


def test_video_becomes_frames_and_audio_track_elsewhere(
    server: FakeOpenAIServer, video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-key-1234567890")
    model = get_model(f"gemini:gemini-2.5-flash@{server.base_url}")
    assert (model.capabilities.video, model.capabilities.audio) == (False, True)
    model.generate_sync([Message.user(Video(path=video, start=1.0, end=3.0), "Describe.")])
    parts = server.body()["messages"][0]["content"]
    kinds = [p["type"] for p in parts]
    assert kinds.count("image_url") == model.capabilities.video_frames == 8
    assert kinds[-2:] == ["input_audio", "text"]
    times = [
        float(p["text"].strip("[] s"))
        for p in parts
        if p["type"] == "text" and p["text"].endswith(" s]")
    ]
    assert len(times) == 8 and min(times) >= 1.0 and max(times) < 3.0
    assert parts[0]["text"].startswith("[video video.mp4, 1.0-3.0 s: 8 frames]")


def test_frames_only_when_the_model_takes_no_audio(server: FakeOpenAIServer, video: Path) -> None:
    model = get_model(f"vllm:llava-1.6@{server.base_url}")
    model.generate_sync([Message.user(Video(path=video))])
    kinds = [p["type"] for p in server.body()["messages"][0]["content"]]
    assert "input_audio" not in kinds and kinds.count("image_url") == 8


def test_documents_inline_text_or_go_as_files(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\nThe key is blue.")
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(b"%PDF-1.4 fake")
    get_model(f"vllm:m@{server.base_url}").generate_sync([Message.user(Document(path=notes))])
    assert (
        server.body()["messages"][0]["content"] == "[document notes.md]\n# Notes\nThe key is blue."
    )

    monkeypatch.setenv("OPENAI_API_KEY", "sk-x-1234567890")
    get_model(f"openai:gpt-5-mini@{server.base_url}").generate_sync(
        [Message.user(Document(path=pdf))]
    )
    part = server.body()["messages"][0]["content"][0]
    assert part["type"] == "file" and part["file"]["filename"] == "paper.pdf"
    assert _decode_data_url(part["file"]["file_data"]) == ("application/pdf", pdf.read_bytes())


def test_media_a_model_cannot_take_fails_before_sending(
    server: FakeOpenAIServer, audio_file: Path
) -> None:
    name = f"vllm:meta-llama/Llama-3.1-8B@{server.base_url}"
    with pytest.raises(ModelError) as err:
        get_model(name).generate_sync([Message.user(Audio(path=audio_file))])
    assert err.value.kind is ErrorKind.UNSUPPORTED_MEDIA
    assert "does not take audio (tones.wav); capability flag 'audio' is off" in str(err.value)
    assert "models.capabilities" in str(err.value)
    assert server.chat_requests == []


def test_server_400_for_media_says_so(server: FakeOpenAIServer, image_file: Path) -> None:
    server.push(reply_error(400, "Model does not support image input"))
    name = f"vllm:Qwen/Qwen2.5-VL-7B@{server.base_url}"
    with pytest.raises(ModelError) as err:
        get_model(name).generate_sync([Message.user(Image(path=image_file))])
    message = str(err.value)
    assert err.value.kind is ErrorKind.UNSUPPORTED_MEDIA
    assert "server rejected a request with media (Model does not support image input)" in message
    assert "correct its flags in models.capabilities" in message


def test_bad_time_range_is_a_media_error(server: FakeOpenAIServer, audio_file: Path) -> None:
    with pytest.raises(ModelError) as err:
        get_model(f"vllm:qwen2-audio@{server.base_url}").generate_sync(
            [Message.user(Audio(path=audio_file, start=1.0, end=99.0))]
        )
    assert err.value.kind is ErrorKind.MEDIA
    assert server.chat_requests == []


def test_media_in_tool_results_follows_as_a_user_turn(
    server: FakeOpenAIServer, image_file: Path
) -> None:
    call = ToolCall(id="call_1", name="crop", arguments={})
    history = [
        Message.user("zoom in"),
        Message.assistant(tool_calls=[call]),
        Message.tool("call_1", "cropped:", Image(path=image_file)),
    ]
    get_model(f"vllm:Qwen/Qwen2.5-VL-7B@{server.base_url}").generate_sync(history)
    wire = server.body()["messages"]
    # The label before the image travels with it; the tool message says where it went.
    assert wire[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "[media follow in the next message]",
    }
    assert wire[3]["role"] == "user"
    assert [p["type"] for p in wire[3]["content"]] == ["text", "text", "image_url"]
    assert wire[3]["content"][1] == {"type": "text", "text": "cropped:"}
    assert json.dumps(wire[3]).count("call_1") == 1


def test_a_server_crash_on_media_parts_is_unsupported_media(
    server: FakeOpenAIServer, image_file: Path
) -> None:
    """Issue 44.10: llama-cpp-python's 500 for content parts a text chat format cannot join is
    unsupported media: not retried, with the flags hint."""
    crash = 'can only concatenate str (not "list") to str  File "/x/llama_chat_format.py"'
    for _ in range(4):
        server.push(reply_error(500, crash))
    name = f"vllm:Qwen/Qwen2.5-VL-7B@{server.base_url}"
    with pytest.raises(ModelError) as err:
        get_model(name).generate_sync([Message.user("What?", Image(path=image_file))])
    assert err.value.kind is ErrorKind.UNSUPPORTED_MEDIA and err.value.attempts == 1
    assert len(server.chat_requests) == 1
    assert "the server cannot read the request's media" in str(err.value)
    assert "llama_chat_format" not in str(err.value) and "models.capabilities" in str(err.value)
    assert err.value.model_failure  # it was sent: the endpoint refused it


def test_media_refused_before_sending_is_bad_input(
    server: FakeOpenAIServer, image_file: Path, tmp_path: Path
) -> None:
    """Issue 44.9: ``omnilab chat --image`` to a text-only model sent nothing: exit 1, not 4."""
    import subprocess
    import sys

    name = f"vllm:meta-llama/Llama-3.1-8B@{server.base_url}"
    with pytest.raises(ModelError) as err:
        get_model(name).generate_sync([Message.user(Image(path=image_file))])
    assert not err.value.model_failure
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", "chat", "Hi", "--image", str(image_file), "-m", name],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "does not take image" in proc.stderr and server.chat_requests == []
