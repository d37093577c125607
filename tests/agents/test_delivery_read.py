"""The read_* tools under omnilab's defaults and under the OmniAtlas preset (issue 20, finding
5), on the wire of a local recording server: clamping, the read_audio cap, read_video's frame
rate, count and size, and which read_* tools are offered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_delivery import GEMINI, image_size, preset_options, run, wav_seconds

from omnilab.models.fake_server import FakeOpenAIServer, reply_text, reply_tool_calls

VISION_AUDIO = GEMINI  # frames and audio parts, no video input


def read_round(
    tmp_path: Path, files: list[Path], call: tuple[str, dict[str, Any]], **options: object
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """One tool call and the answer: the tool message, the parts of the media turn after it
    and the tools offered."""
    with FakeOpenAIServer() as server:
        server.push(reply_tool_calls(call), reply_text("<answer>a</answer>"))
        run(server, VISION_AUDIO, files, tmp_path, **options)
        body = server.body(1)
    messages = body["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    after = messages[messages.index(tool) + 1 :]
    media = after[0]["content"] if after else []
    offered = [t["function"]["name"] for t in body["tools"]]
    return tool, media, offered


def atlas(**read: object) -> dict[str, Any]:
    options = preset_options("omniatlas-paper")
    options["read_tools"] = {**options["read_tools"], **read}
    return options


def test_out_of_range_end_is_an_error_by_default(tmp_path: Path, video: Path) -> None:
    call = ("read_video", {"video_id": "video_1", "t_start": 1, "t_end": 60})
    tool, _media, _ = read_round(tmp_path, [video], call, mode="active")
    assert "TS_OOB" in tool["content"] and "past the end" in tool["content"]


def test_preset_clamps_the_end_to_the_files_length(tmp_path: Path, video: Path) -> None:
    call = ("read_video", {"video_id": "video_1", "t_start": 1, "t_end": 60})
    tool, media, _ = read_round(tmp_path, [video], call, **preset_options("omniatlas-paper"))
    assert tool["content"].startswith("video_1 from 1.0 s to 4.0 s")
    assert any(p["type"] == "image_url" for p in media)


def test_a_start_past_the_end_stays_an_error_when_clamping(tmp_path: Path, video: Path) -> None:
    call = ("read_video", {"video_id": "video_1", "t_start": 30, "t_end": 60})
    tool, _media, _ = read_round(tmp_path, [video], call, **preset_options("omniatlas-paper"))
    assert tool["content"].startswith("Error [")


def frame_times(media: list[dict[str, Any]]) -> list[float]:
    labels = [p["text"] for p in media if p["type"] == "text" and p["text"].startswith("t=")]
    return [float(re.fullmatch(r"t=([\d.]+) s", label).group(1)) for label in labels]  # type: ignore[union-attr]


def test_read_video_default_and_preset_frames(tmp_path: Path, video: Path) -> None:
    call = ("read_video", {"video_id": "video_1", "t_start": 0, "t_end": 4})
    _tool, media, _ = read_round(tmp_path, [video], call, mode="active")
    assert len(frame_times(media)) == 5  # 1 fps, both ends
    first = next(p for p in media if p["type"] == "image_url")
    assert image_size(first) == (320, 240)
    _tool, media, _ = read_round(tmp_path, [video], call, **preset_options("omniatlas-paper"))
    assert len(frame_times(media)) == 9  # 2 fps, both ends
    assert {image_size(p) for p in media if p["type"] == "image_url"} == {(256, 192)}


def test_read_video_frame_cap(tmp_path: Path, video: Path) -> None:
    call = ("read_video", {"video_id": "video_1", "t_start": 0, "t_end": 4})
    _tool, media, _ = read_round(tmp_path, [video], call, **atlas(video_max_frames=3))
    assert len(frame_times(media)) == 3


def test_read_audio_is_capped_and_says_so(tmp_path: Path, audio_file: Path) -> None:
    call = ("read_audio", {"audio_id": "audio_1", "t_start": 0, "t_end": 3})
    _tool, media, _ = read_round(tmp_path, [audio_file], call, **atlas(audio_max_s=1))
    said = [p["text"] for p in media if p["type"] == "text"]
    assert any("from 0.0 s to 1.0 s (cut to 1.0 s" in t for t in said)
    audio = [p for p in media if p["type"] == "input_audio"]
    assert len(audio) == 1 and wav_seconds(audio[0]) == pytest.approx(1.0, abs=0.05)
    _tool, media, _ = read_round(tmp_path, [audio_file], call, mode="active")
    assert wav_seconds(next(p for p in media if p["type"] == "input_audio")) == pytest.approx(
        3.0, abs=0.05
    )


def test_which_read_tools_are_offered(tmp_path: Path, video: Path, audio_file: Path) -> None:
    call = ("read_video", {"video_id": "video_1", "t_start": 0, "t_end": 1})
    _t, _m, offered = read_round(tmp_path, [video], call, mode="active")
    assert {"read_video", "read_audio"} <= set(offered) and "read_image" not in offered
    _t, _m, offered = read_round(tmp_path, [video], call, **preset_options("omniatlas-paper"))
    # The reference: read_audio for audio files only, read_image always.
    assert "read_audio" not in offered and {"read_video", "read_image"} <= set(offered)
    _t, _m, offered = read_round(
        tmp_path, [video, audio_file], call, **preset_options("omniatlas-paper")
    )
    assert "read_audio" in offered


def test_audio_only_read_audio_refuses_a_video(
    tmp_path: Path, video: Path, audio_file: Path
) -> None:
    call = ("read_audio", {"audio_id": "video_1", "t_start": 0, "t_end": 1})
    tool, _m, _ = read_round(tmp_path, [video, audio_file], call, **atlas())
    assert "audio_1" in tool["content"] and "error" in tool["content"].lower()
    tool, media, _ = read_round(tmp_path, [video, audio_file], call, mode="active")
    assert any("the video's audio track" in p.get("text", "") for p in media)


def test_media_sit_inside_the_tool_message_when_the_server_accepts_it(
    tmp_path: Path, video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.config import get_settings

    call = ("read_video", {"video_id": "video_1", "t_start": 0, "t_end": 2})
    options = preset_options("omniatlas-paper")
    tool, media, _ = read_round(tmp_path / "a", [video], call, **options)
    assert isinstance(tool["content"], str) and any(p["type"] == "image_url" for p in media)
    monkeypatch.setenv("OMNILAB_MODELS__CAPABILITIES", '{"*gemini*": {"tool_media": true}}')
    get_settings.cache_clear()
    tool, media, _ = read_round(tmp_path / "b", [video], call, **options)
    assert media == []  # no user turn after the tool message
    parts = tool["content"]
    images = [i for i, p in enumerate(parts) if p["type"] == "image_url"]
    assert len(images) == 5 and kinds_of(parts).count("input_audio") == 1  # 2 fps over 2 s
    assert all(parts[i - 1]["text"].startswith("t=") for i in images)
    assert parts[0]["text"].startswith("video_1 from 0.0 s to 2.0 s")


def kinds_of(parts: list[dict[str, Any]]) -> list[str]:
    return [p["type"] for p in parts]
