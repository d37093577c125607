"""Request bodies streamed from files (issue 37): the same bytes as before, in bounded memory.

``wire_bodies_before.json`` holds the SHA-256 of the bodies the code sent before streaming
existed (commit e1d5fee) for the cases below, with the library versions that made them: the
pictures and sound come out of PyAV and Pillow, so with other versions those cases are skipped
(the other tests compare the streamed bytes with the in-memory JSON of the same body).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.bench.protocols import get_protocol
from omnilab.config import get_settings
from omnilab.content import Audio, Document, Image, Text, Video
from omnilab.inputs import InputSet
from omnilab.media import synth
from omnilab.models import ErrorKind, Message, ModelError, ToolCall, get_model
from omnilab.models.adapter import AdapterSpec
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ProviderError
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.providers import wire_body
from omnilab.models.providers.openai import OpenAIAdapter
from omnilab.models.providers.wire_body import FileData, materialize, stream_body
from omnilab.models.types import GenerateConfig
from omnilab.trajectory import TrajectoryWriter

BEFORE = json.loads((Path(__file__).parents[1] / "data" / "wire_bodies_before.json").read_text())


def _versions() -> dict[str, str]:
    import av
    import numpy
    import PIL

    return {"av": av.__version__, "pillow": PIL.__version__, "numpy": numpy.__version__}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _first_body(tmp: Path, model: str, video: Path, options: dict[str, Any]) -> bytes:
    """The raw bytes of the first request of a ``tir`` run on ``video``."""
    with FakeOpenAIServer() as server:
        server.push(reply_text("<answer>a</answer>"))
        task = AgentTask(
            id="t", question="What happens?", inputs=list(InputSet.from_paths([video]))
        )
        with TrajectoryWriter(tmp / "run.jsonl") as writer:
            ctx = AgentContext(
                model=get_model(f"vllm:{model}@{server.base_url}"),
                roles={},
                tools=None,
                budgets=Budgets(max_turns=4),
                workspace=tmp / "ws",
                trajectory=writer,
            )
            assert asyncio.run(get_agent("tir", **options).run(task, ctx)).status == "answered"
        first = server.chat_requests[0]
    assert not first.chunked and int(first.headers["content-length"]) == len(first.raw)
    return first.raw


def _adapter(caps: Capabilities, base_url: str = "http://127.0.0.1:9/v1") -> OpenAIAdapter:
    spec = AdapterSpec(
        name=f"vllm:m@{base_url}",
        provider="vllm",
        model="m",
        base_url=base_url,
        api_key=None,
        capabilities=caps,
        settings=get_settings().models,
    )
    return OpenAIAdapter(spec)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wire")
    return synth.make_video(folder / "clip.mp4", duration=3.0, size=(640, 360), gop_seconds=1.0)


same_libraries = pytest.mark.skipif(
    _versions() != BEFORE["versions"],
    reason=f"the recorded bodies were made with {BEFORE['versions']}",
)


@same_libraries
@pytest.mark.parametrize(
    ("case", "model", "preset"),
    [
        ("paper_image_audio", "gemini-2.0-flash", True),  # 2 fps frames at 512 px + soundtrack
        ("default_image_audio", "gemini-2.0-flash", False),  # the transport's frames + track
        ("paper_omni", "Qwen2.5-Omni-7B", True),  # the video file + soundtrack
    ],
)
def test_first_request_is_byte_identical_to_before_streaming(
    tmp_path: Path, clip: Path, case: str, model: str, preset: bool
) -> None:
    # The preset's media delivery in omnilab's own loop (the bodies were recorded before the
    # preset ran the release's loop, issue 43; that loop's bodies are compared with the
    # release's own in tests/bench/test_omnigaia_release_side_by_side.py).
    paper = get_protocol("omnigaia-paper").agent_options
    options = {**paper, "rules": "omnilab"} if preset else {}
    assert _sha(_first_body(tmp_path / "cold", model, clip, options)) == BEFORE[case]
    # Again from the media cache's prepared parts: still the same bytes.
    assert _sha(_first_body(tmp_path / "warm", model, clip, options)) == BEFORE[case]


@same_libraries
def test_fitted_images_and_ranged_video_are_byte_identical(tmp_path: Path, clip: Path) -> None:
    image = synth.make_image(tmp_path / "image.png", size=(320, 240), index=5)
    message = Message.user(
        "Look.",
        Image(path=image),
        Image(path=image, box=(10, 20, 110, 70)),
        Video(path=clip, start=0.5, end=2.5),
    )
    with FakeOpenAIServer() as server:
        caps = Capabilities(image=True, audio=True, max_image_edge=160)
        adapter = _adapter(caps, server.base_url)
        for _ in range(2):  # cold, then from the cache
            asyncio.run(adapter.generate([message], [], GenerateConfig()))
        raws = [r.raw for r in server.chat_requests]
    assert [_sha(r) for r in raws] == [BEFORE["fitted_images_and_ranged_video"]] * 2


def _mixed_messages(tmp: Path, image: Path, audio: Path, clip: Path) -> list[Message]:
    pdf = tmp / "doc.pdf"
    pdf.write_bytes(b"%PDF-1.4 \x00\x01 fake")
    text = tmp / "notes.txt"
    text.write_text("plain notes", encoding="utf-8")
    call = ToolCall(id="c1", name="look", arguments={"q": 'é "quoted" \\ omnilab-file:x:0'})
    return [
        Message.system('Ünïcode system text with "quotes" and \\ and \n newlines'),
        Message.user(
            "omnilab-file:deadbeef:0 is only text",
            Image(path=image),
            Image(data=image.read_bytes(), mime_type="image/png"),
            Audio(path=audio),
            Audio(path=audio, start=0.5, end=1.5),
            Video(path=clip),
            Document(path=pdf),
            Document(path=text),
        ),
        Message(role="assistant", content=[], tool_calls=[call]),
        Message(role="tool", tool_call_id="c1", content=[Text(text="seen"), Image(path=image)]),
    ]


def test_streamed_body_is_the_in_memory_json(
    tmp_path: Path, image_file: Path, audio_file: Path, clip: Path
) -> None:
    messages = _mixed_messages(tmp_path, image_file, audio_file, clip)
    caps = Capabilities(image=True, audio=True, video=True, documents=True)
    with FakeOpenAIServer() as server:
        adapter = _adapter(caps, server.base_url)
        config = GenerateConfig(temperature=0.5, extra_body={"top_k": 20})
        streamed = adapter.streamed_body(messages, [], config)
        expected = json.dumps(adapter.request_body(messages, [], config), ensure_ascii=False)
        assert streamed.files >= 5  # every file payload is read while sending, not before
        assert streamed.to_bytes() == expected.encode()
        assert streamed.size == len(expected.encode())
        asyncio.run(adapter.generate(messages, [], config))
        assert server.chat_requests[0].raw == expected.encode()
    # And the payloads are the files themselves.
    user = json.loads(expected)["messages"][1]["content"]
    assert base64.b64decode(user[1]["image_url"]["url"].partition(",")[2]) == (
        image_file.read_bytes()
    )
    assert base64.b64decode(user[3]["input_audio"]["data"]) == audio_file.read_bytes()


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 25])
def test_file_payloads_of_any_length_match_one_base64(
    tmp_path: Path, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire_body, "_READ_BYTES", 9)  # many pieces, each a multiple of 3
    blob = tmp_path / "blob.bin"
    blob.write_bytes(os.urandom(size))
    body = {"a": [FileData(blob, "data:x/y;base64,"), "ü"], "b": FileData(blob)}
    streamed = stream_body(body)
    expected = json.dumps(materialize(body), ensure_ascii=False).encode()
    assert streamed.to_bytes() == expected
    assert streamed.size == len(expected)


def test_a_prepared_file_removed_before_sending_is_a_media_error(
    tmp_path: Path, image_file: Path
) -> None:
    image = tmp_path / "shown.png"
    image.write_bytes(image_file.read_bytes())
    with FakeOpenAIServer() as server:
        adapter = _adapter(Capabilities(image=True), server.base_url)
        body = adapter.streamed_body([Message.user(Image(path=image))], [], GenerateConfig())
        image.unlink()
        with pytest.raises(ProviderError) as info:
            asyncio.run(adapter._http.post(body, timeout_s=10))
    assert info.value.kind is ErrorKind.MEDIA
    assert "shown.png was removed before it was sent" in str(info.value)


def test_a_large_request_is_sent_without_holding_its_media(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 24 MB audio payload (32 MB of base64) goes out while the process allocates a few MB."""
    audio = tmp_path / "long.wav"
    audio.write_bytes(b"RIFF" + os.urandom(24 * 1024 * 1024))
    with FakeOpenAIServer(keep_bodies=False) as server:
        model = get_model(f"vllm:Qwen/Qwen2.5-Omni-7B@{server.base_url}")
        message = Message.user(Audio(path=audio, mime_type="audio/wav"), "Transcribe.")
        tracemalloc.start()
        try:
            model.generate_sync([message])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        sent = server.chat_requests[0].size
    assert sent > 32 * 1024 * 1024
    assert peak < 8 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB while sending {sent / 1e6:.1f} MB"


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_an_unreadable_media_file_fails_before_sending_in_one_line(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "shown.png"
    if kind == "folder":
        path.mkdir()
    with FakeOpenAIServer() as server:
        model = get_model(f"vllm:Qwen/Qwen2.5-VL-7B@{server.base_url}", max_attempts=1)
        with pytest.raises(ModelError) as info:
            model.generate_sync([Message.user("What is this?", Image(path=path))])
        assert server.chat_requests == []  # nothing was sent
    assert info.value.kind is ErrorKind.MEDIA
    message = str(info.value)
    assert "cannot read image" in message and "shown.png" in message and "\n" not in message
