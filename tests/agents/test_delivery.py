"""Media delivery on the wire (issue 20, findings 2-4): what the first request of a ``tir`` run
carries under omnilab's defaults and under the OmniGAIA presets' agent options, read on a local
OpenAI-compatible server that records every request."""

from __future__ import annotations

import asyncio
import base64
import io
import wave
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.bench.protocols import get_protocol
from omnilab.inputs import InputSet
from omnilab.media import synth
from omnilab.models import get_model
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.trajectory import Trajectory, TrajectoryWriter

OMNI = "Qwen2.5-Omni-7B"  # image, audio and video (capability families)
GEMINI = "gemini-2.0-flash"  # image and audio, no video input: videos go as frames


def preset_options(name: str) -> dict[str, Any]:
    # The preset's delivery settings in omnilab's own loop, which labels each part (omnigaia-paper
    # runs the release's loop, issue 43: tests/agents/test_tir_release.py pins its parts).
    return {**get_protocol(name).agent_options, "rules": "omnilab"}


def first_parts(
    model: str, files: list[Path], tmp_path: Path, **options: object
) -> list[dict[str, Any]]:
    """The parts of the first user message of a tir run (the model answers at once)."""
    with FakeOpenAIServer() as server:
        server.push(reply_text("<answer>a</answer>"))
        trajectory = run(server, model, files, tmp_path, **options)
        assert trajectory.status == "answered", trajectory.events
        content = server.body(0)["messages"][1]["content"]
    assert isinstance(content, list)
    return content


def run(
    server: FakeOpenAIServer, model: str, files: list[Path], tmp_path: Path, **options: object
) -> Trajectory:
    task = AgentTask(id="t", question="What happens?", inputs=list(InputSet.from_paths(files)))
    n = len(list(tmp_path.glob("run-*.jsonl")))
    with TrajectoryWriter(tmp_path / f"run-{n}.jsonl") as writer:
        ctx = AgentContext(
            model=get_model(f"vllm:{model}@{server.base_url}"),
            roles={},
            tools=None,
            budgets=Budgets(max_turns=4),
            workspace=tmp_path / f"ws{n}",
            trajectory=writer,
        )
        return asyncio.run(get_agent("tir", **options).run(task, ctx))


def kinds(parts: list[dict[str, Any]]) -> list[str]:
    return [p["type"] for p in parts]


def wav_seconds(part: dict[str, Any]) -> float:
    assert part["input_audio"]["format"] == "wav"
    with wave.open(io.BytesIO(base64.b64decode(part["input_audio"]["data"]))) as w:
        return w.getnframes() / w.getframerate()


def image_size(part: dict[str, Any]) -> tuple[int, int]:
    data = part["image_url"]["url"].split(",", 1)[1]
    with PILImage.open(io.BytesIO(base64.b64decode(data))) as image:
        return image.size


def texts(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


@pytest.fixture(scope="module")
def long_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 s, 640x480, with sound: 2 fps gives 20 frames, more than the 8 of the default."""
    folder = tmp_path_factory.mktemp("delivery")
    return synth.make_video(folder / "long.mp4", duration=10.0, fps=5, size=(640, 480))


@pytest.fixture(scope="module")
def big_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth.make_image(tmp_path_factory.mktemp("img") / "big.png", size=(1200, 900))


# -- finding 2: the soundtrack of a video for video-capable models ------------------------------


def test_video_capable_model_gets_no_separate_soundtrack_by_default(
    tmp_path: Path, video: Path
) -> None:
    parts = first_parts(OMNI, [video], tmp_path, mode="native")
    assert "video_url" in kinds(parts)
    assert "input_audio" not in kinds(parts)


def test_preset_sends_the_soundtrack_as_its_own_audio_part(tmp_path: Path, video: Path) -> None:
    parts = first_parts(OMNI, [video], tmp_path, **preset_options("omnigaia-paper"))
    assert kinds(parts).count("video_url") == 1
    audio = [p for p in parts if p["type"] == "input_audio"]
    assert len(audio) == 1
    assert kinds(parts).index("input_audio") > kinds(parts).index("video_url")
    assert wav_seconds(audio[0]) == pytest.approx(4.0, abs=0.1)  # the whole 4 s video
    assert "[video_1 soundtrack, 0 to 4 s]" in texts(parts)


def test_soundtrack_is_cut_at_its_limit(tmp_path: Path, video: Path) -> None:
    options = preset_options("omnigaia-paper")
    options["delivery"] = {**options["delivery"], "soundtrack_max_s": 1.5}
    audio = [p for p in first_parts(OMNI, [video], tmp_path, **options) if "input_audio" in p]
    assert wav_seconds(audio[0]) == pytest.approx(1.5, abs=0.1)


def test_the_tasks_matching_audio_file_is_the_soundtrack(
    tmp_path: Path, video: Path, audio_file: Path
) -> None:
    twin = tmp_path / "video.wav"  # the same name as the video
    twin.write_bytes(audio_file.read_bytes())
    parts = first_parts(OMNI, [video, twin], tmp_path, **preset_options("omnigaia-paper"))
    audio = [p for p in parts if p["type"] == "input_audio"]
    assert len(audio) == 1  # the file itself, nothing extracted from the video
    assert wav_seconds(audio[0]) == pytest.approx(3.0, abs=0.1)
    assert "[video_1 soundtrack: audio_1]" in texts(parts)


def test_silent_video_has_no_soundtrack_part(tmp_path: Path, silent_video: Path) -> None:
    parts = first_parts(OMNI, [silent_video], tmp_path, **preset_options("omnigaia-paper"))
    assert "input_audio" not in kinds(parts)
    assert "[video_1: no audio track]" in texts(parts)


# -- finding 3: frames for image+audio models ---------------------------------------------------


def test_image_audio_model_gets_eight_frames_by_default(tmp_path: Path, long_video: Path) -> None:
    parts = first_parts(GEMINI, [long_video], tmp_path, mode="native")
    assert kinds(parts).count("image_url") == 8
    assert image_size(next(p for p in parts if p["type"] == "image_url")) == (640, 480)


def test_preset_sends_frames_at_2_fps_up_to_512_px_plus_the_soundtrack(
    tmp_path: Path, long_video: Path
) -> None:
    parts = first_parts(GEMINI, [long_video], tmp_path, **preset_options("omnigaia-paper"))
    images = [i for i, p in enumerate(parts) if p["type"] == "image_url"]
    assert len(images) == 20  # 10 s at 2 fps
    assert {image_size(parts[i]) for i in images} == {(512, 384)}
    assert all(parts[i - 1]["text"].startswith("t=") for i in images)  # each after its time
    audio = [p for p in parts if p["type"] == "input_audio"]
    assert len(audio) == 1 and wav_seconds(audio[0]) == pytest.approx(10.0, abs=0.1)
    assert "video_url" not in kinds(parts)


def test_frame_count_is_capped(tmp_path: Path, long_video: Path) -> None:
    options = preset_options("omnigaia-paper")
    options["delivery"] = {**options["delivery"], "frames_max": 5}
    parts = first_parts(GEMINI, [long_video], tmp_path, **options)
    assert kinds(parts).count("image_url") == 5


# -- finding 4: the starting view of active mode (OmniAtlas) ------------------------------------


def test_active_default_is_a_soundless_contact_sheet_and_shrunk_images(
    tmp_path: Path, video: Path, big_image: Path
) -> None:
    parts = first_parts(OMNI, [video, big_image], tmp_path, mode="active")
    assert kinds(parts).count("image_url") == 2  # the sheet and the image
    assert "input_audio" not in kinds(parts) and "video_url" not in kinds(parts)
    assert "contact sheet of 16 frames" in texts(parts)
    assert max(image_size(parts[-2])) == 768


def test_omniatlas_preset_starts_from_the_whole_video_with_sound_and_full_images(
    tmp_path: Path, video: Path, big_image: Path
) -> None:
    parts = first_parts(OMNI, [video, big_image], tmp_path, **preset_options("omniatlas-paper"))
    assert kinds(parts).count("video_url") == 1
    audio = [p for p in parts if p["type"] == "input_audio"]
    assert len(audio) == 1 and wav_seconds(audio[0]) == pytest.approx(4.0, abs=0.1)
    assert "contact sheet" not in texts(parts)
    images = [p for p in parts if p["type"] == "image_url"]
    assert [image_size(p) for p in images] == [(1200, 900)]


def test_omniatlas_preset_gives_frames_to_a_model_without_video_input(
    tmp_path: Path, long_video: Path
) -> None:
    parts = first_parts(GEMINI, [long_video], tmp_path, **preset_options("omniatlas-paper"))
    assert kinds(parts).count("image_url") == 20  # 2 fps over 10 s
    assert kinds(parts).count("input_audio") == 1


def test_start_view_audio_cut_follows_the_option(
    tmp_path: Path, video: Path, audio_file: Path
) -> None:
    options = preset_options("omniatlas-paper")
    assert options["delivery"]["start_audio_s"] == 900  # the reference's 15 minutes
    options["delivery"] = {**options["delivery"], "start_audio_s": 2}
    parts = first_parts(OMNI, [video, audio_file], tmp_path, **options)
    audio = [p for p in parts if p["type"] == "input_audio"]
    # The video's soundtrack and the audio file, both cut at 2 s.
    assert [round(wav_seconds(p), 1) for p in audio] == [2.0, 2.0]
    assert "first 2 s; use read_audio for the rest" in texts(parts)


def test_bad_delivery_option_is_a_clear_error() -> None:
    from omnilab.agents.base import AgentConfigError

    with pytest.raises(AgentConfigError, match=r"delivery\.start_view"):
        get_agent("tir", delivery={"start_view": "movie"})
