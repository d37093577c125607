"""What the ``master`` agent's modality agents send under ``rules="release"``, call by call, as
huawei-lin/Agent-Omni ``src/subagents/*`` and ``src/utils.py`` send it: no labels, images as PNG
with the longest side <= 512, one call per audio file as a mono 16-bit WAV, video frames
stretched to 336x336 in batches of ``max_image_input`` (one call per batch), replies joined."""

from __future__ import annotations

import asyncio
import json
import wave
from pathlib import Path

from PIL import Image as PILImage
from test_master_kit import decision, model, plan, run_master
from test_master_release import ReleasePool

from omnilab.agents.master import MasterOptions
from omnilab.agents.master.release_media import frame_times
from omnilab.bench.protocols import get_protocol
from omnilab.content import Audio, Image, Text
from omnilab.media.synth import make_audio, make_image, make_video
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.registry import get_model
from omnilab.models.types import GenerateConfig, Message


def _pool(**questions: list[str]) -> ReleasePool:
    return ReleasePool(
        queues={
            "reasoning": [json.dumps(plan("look", **questions))],
            "decision": [json.dumps(decision("done", True))],
        }
    )


def _asked(pool: ReleasePool, question: str) -> list[list[Message]]:
    return [m for m in pool.seen if m[-1].content and m[-1].content[-1] == Text(text=question)]


def test_frame_times_follow_sample_frames() -> None:
    assert frame_times(50, 25.0, 60) == [0.0, 1.0]  # every round(fps)-th frame
    spread = frame_times(3000, 25.0, 60)  # 120 s: 120 > 60, np.linspace over the indices
    assert len(spread) == 60 and spread[0] == 0.0 and spread[-1] == 2999 / 25.0


def test_images_go_as_png_of_at_most_512_without_labels(tmp_path: Path) -> None:
    photos = [make_image(tmp_path / f"p{i}.jpg", size=(1200, 900), index=i) for i in range(3)]
    pool = _pool(image_agent=["What is shown?"])
    run_master(tmp_path, model(pool, "pool"), photos, "What?", rules="release", max_rounds=1,
               max_image_input=2)  # fmt: skip
    (call,) = _asked(pool, "What is shown?")
    (user,) = call  # the image agent has no system prompt
    images = [p for p in user.content if isinstance(p, Image)]
    assert len(images) == 2  # only the first max_image_input batch (the loop returns)
    assert [p.type for p in user.content] == ["image", "image", "text"]  # no label parts
    for part in images:
        assert part.path is not None
        with PILImage.open(part.path) as picture:
            assert picture.format == "PNG" and picture.size == (512, 384)


def test_one_call_per_audio_file_as_mono_16_bit_wav_replies_joined(tmp_path: Path) -> None:
    sounds = [
        make_audio(tmp_path / "a.wav", duration=1.0, sample_rate=22050, channels=2),
        make_audio(tmp_path / "b.wav", duration=1.0, sample_rate=8000),
    ]
    pool = _pool(audio_agent=["What is heard?"])
    run = run_master(tmp_path, model(pool, "pool"), sounds, "What?", rules="release",
                     max_rounds=1)  # fmt: skip
    calls = _asked(pool, "What is heard?")
    assert len(calls) == 2
    rates = []
    for system, user in calls:
        assert system.role == "system" and system.text == "You are a helpful assistant."
        (audio,) = [p for p in user.content if isinstance(p, Audio)]
        assert [p.type for p in user.content] == ["audio", "text"]
        assert audio.path is not None
        with wave.open(str(audio.path)) as w:
            assert (w.getnchannels(), w.getsampwidth()) == (1, 2)
            rates.append(w.getframerate())
    assert sorted(rates) == [8000, 22050]  # each file at its own rate
    (answers,) = run.notes_of("answers")
    assert answers.data["questions_and_answers"][0]["answer"] == (
        "pool says: What is heard?pool says: What is heard?"  # += without a separator
    )


def test_video_frames_336_in_batches_one_call_each(tmp_path: Path) -> None:
    clip = make_video(tmp_path / "v.mp4", duration=5.0, fps=5, size=(320, 240), audio=False)
    pool = _pool(video_agent=["What happens?"])
    run_master(tmp_path, model(pool, "pool"), [clip], "What?", rules="release", max_rounds=1,
               max_image_input=2)  # fmt: skip
    calls = _asked(pool, "What happens?")
    frames = [[p for p in user.content if isinstance(p, Image)] for _, user in calls]
    assert [len(f) for f in frames] == [2, 2, 1]  # 5 frames at 1 fps, 2 per call
    for batch in frames:
        for part in batch:
            assert part.path is not None
            with PILImage.open(part.path) as picture:
                assert picture.format == "PNG" and picture.size == (336, 336)
    assert all(len(user.content) == len(f) + 1 for (_, user), f in zip(calls, frames, strict=True))


def test_the_preset_sends_audio_as_an_audio_url_data_url(tmp_path: Path) -> None:
    preset = MasterOptions.model_validate(get_protocol("agent-omni-paper").agent_options)
    sound = make_audio(tmp_path / "a.wav", duration=0.5)
    message = Message(role="user", content=[Audio(path=sound), Text(text="What is heard?")])
    with FakeOpenAIServer(default=reply_text("a tone")) as fake:
        model = get_model(f"vllm:Qwen/Qwen2.5-Omni-7B@{fake.base_url}", cache=False)
        asyncio.run(model.generate([message], config=preset.generate_for("audio")))
        asyncio.run(model.generate([message], config=GenerateConfig()))
        release_body, default_body = fake.body(0), fake.body(1)
    audio, _ = release_body["messages"][0]["content"]
    assert audio["type"] == "audio_url"
    assert audio["audio_url"]["url"].startswith("data:audio/wav;base64,UklGR")  # RIFF
    assert default_body["messages"][0]["content"][0]["type"] == "input_audio"
