"""read_video / read_audio / read_image end to end through Tool.__call__, for each kind of model."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnilab.config import get_settings
from omnilab.content import Audio, Image, Text, Video
from omnilab.inputs import InputFile, InputSet
from omnilab.media import audio_samples, synth
from omnilab.media.image import crop, load_image
from omnilab.models import Capabilities
from omnilab.tools import Tool, ToolResult
from omnilab.tools.perception import active_perception_tools

SEES_AND_HEARS = Capabilities(image=True, audio=True)
NATIVE_VIDEO = Capabilities(image=True, audio=True, video=True)
TEXT_ONLY = Capabilities()
FPS = 25  # synth.make_video's default

PAPER_SCHEMAS: dict[str, dict[str, Any]] = {
    "read_video": {
        "description": "Reads a specific time segment of a video file to examine details.",
        "parameters": {
            "type": "object",
            "properties": {
                "video_id": {"type": "string", "description": "The video identifier or filename."},
                "t_start": {"type": "integer", "description": "Start time in seconds."},
                "t_end": {"type": "integer", "description": "End time in seconds."},
            },
            "required": ["video_id", "t_start", "t_end"],
        },
    },
    "read_audio": {
        "description": "Reads a specific time segment of an audio file to listen to details.",
        "parameters": {
            "type": "object",
            "properties": {
                "audio_id": {"type": "string", "description": "The audio identifier or filename."},
                "t_start": {"type": "integer", "description": "Start time in seconds."},
                "t_end": {"type": "integer", "description": "End time in seconds."},
            },
            "required": ["audio_id", "t_start", "t_end"],
        },
    },
    "read_image": {
        "description": "Reads specific images to view them in detail. Optionally crop the image "
        "by providing a crop box [left, top, right, bottom].",
        "parameters": {
            "type": "object",
            "properties": {
                "image_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "List of image identifiers or filenames.",
                },
                "crop_box": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 4,
                    "maxItems": 4,
                    "description": "Optional. A 4-element list [left, top, right, bottom] "
                    "specifying the cropping rectangle.",
                },
            },
            "required": ["image_ids"],
        },
    },
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("perception_tools")
    return {
        "video": synth.make_video(root / "clip.mp4", duration=4.0, text="HELLO 42"),
        "odd": synth.make_video(root / "odd.mp4", duration=2.5, audio=False),
        "audio": synth.make_audio(root / "tones.wav", duration=3.0),
        "image": synth.make_image(root / "photo.png", size=(320, 240), text="OMNI 7", index=9),
    }


@pytest.fixture()
def inputs(files: dict[str, Path]) -> InputSet:
    return InputSet.from_paths([files["video"], files["odd"], files["audio"], files["image"]])


def tools(inputs: InputSet, caps: Capabilities, workspace: Path | None = None) -> dict[str, Tool]:
    return {
        t.name: t for t in active_perception_tools(inputs, capabilities=caps, workspace=workspace)
    }


def call(t: Tool, **args: Any) -> ToolResult:
    return asyncio.run(t(args))


def wav_seconds(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        assert w.getframerate() == 16_000 and w.getnchannels() == 1
        return w.getnframes() / w.getframerate()


def test_schemas_are_the_papers(inputs: InputSet) -> None:
    for caps in (SEES_AND_HEARS, TEXT_ONLY):
        got = tools(inputs, caps)
        assert list(got) == ["read_video", "read_audio", "read_image"]
        for name, spec in PAPER_SCHEMAS.items():
            assert got[name].spec.model_dump() == {"name": name, **spec}


def test_read_video_gives_timed_frames_and_the_audio_segment(inputs: InputSet) -> None:
    result = call(
        tools(inputs, SEES_AND_HEARS)["read_video"], video_id="video_1", t_start=1, t_end=3
    )
    assert result.ok, result.error
    parts = result.content
    assert isinstance(parts[0], Text) and parts[0].text.startswith("video_1 from 1.0 s")
    pairs = [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 2, 2)]
    assert len(pairs) == 3  # 1 fps over 2 s, both ends included
    for label, image in pairs:
        assert isinstance(label, Text) and isinstance(image, Image) and image.path is not None
        t = float(re.fullmatch(r"t=([\d.]+) s", label.text).group(1))  # type: ignore[union-attr]
        assert 1.0 <= t <= 3.0
        # The saved frame is the one shown at t: synth frames carry their own index.
        assert synth.read_index(load_image(image.path)) == round(t * FPS)
    assert isinstance(parts[-2], Text) and "Audio of video_1 from 1.0 s to 3.0 s" in parts[-2].text
    audio = parts[-1]
    assert isinstance(audio, Audio) and audio.path is not None
    assert wav_seconds(audio.path) == pytest.approx(2.0, abs=1e-3)
    second = audio_samples(audio.path, 0.0, 1.0)
    assert synth.dominant_frequency(second, 16_000) == pytest.approx(synth.tone_freq(1), abs=5)


def test_frame_count_is_capped_by_settings(
    inputs: InputSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION_TOOLS__VIDEO_MAX_FRAMES", "4")
    monkeypatch.setenv("OMNILAB_PERCEPTION_TOOLS__VIDEO_FPS", "10")
    get_settings.cache_clear()
    result = call(
        tools(inputs, SEES_AND_HEARS)["read_video"], video_id="clip.mp4", t_start=0, t_end=4
    )
    images = [p for p in result.content if isinstance(p, Image)]
    assert len(images) == 4


def test_native_video_models_get_the_segment_with_its_sound(inputs: InputSet) -> None:
    result = call(tools(inputs, NATIVE_VIDEO)["read_video"], video_id="video_1", t_start=1, t_end=2)
    kinds = [type(p) for p in result.content]
    assert kinds == [Text, Video]
    video = result.content[1]
    assert isinstance(video, Video) and (video.start, video.end) == (1.0, 2.0)
    assert "with its audio" in result.text


def test_silent_video_says_so_and_t_end_may_round_up(inputs: InputSet) -> None:
    # odd.mp4 lasts 2.5 s: integer times can only name its end as 3.
    result = call(
        tools(inputs, SEES_AND_HEARS)["read_video"], video_id="odd.mp4", t_start=2, t_end=3
    )
    assert result.ok, result.error
    assert re.search(r"from 2\.0 s to 2\.[45]\d? s: 1 frame,", result.text), result.text
    assert result.text.endswith("No audio track.")
    assert not any(isinstance(p, Audio) for p in result.content)


def test_read_video_for_a_text_only_model_is_text_with_times_and_ocr(inputs: InputSet) -> None:
    pytest.importorskip("rapidocr")
    result = call(tools(inputs, TEXT_ONLY)["read_video"], video_id="video_1", t_start=0, t_end=1)
    assert result.ok, result.error
    assert all(isinstance(p, Text) for p in result.content)
    text = result.text
    assert "as text (this model does not take images)" in text
    assert "OCR of frames at 0.0, 1.0 s" in text
    assert '"HELLO 42"' in text
    assert "Sound events: 0.0-1.0 s" in text  # the tones of the audio track, timed


def test_read_audio_returns_the_wav_segment_of_audio_and_of_video(inputs: InputSet) -> None:
    read_audio = tools(inputs, SEES_AND_HEARS)["read_audio"]
    for ref, seconds in (("audio_1", 2.0), ("video_1", 1.0)):
        result = call(read_audio, audio_id=ref, t_start=1, t_end=1 + seconds)
        assert result.ok, result.error
        text, audio = result.content
        assert isinstance(text, Text) and isinstance(audio, Audio) and audio.path is not None
        assert audio.mime_type == "audio/wav"
        assert wav_seconds(audio.path) == pytest.approx(seconds, abs=1e-3)
    assert "(the video's audio track)" in result.text


def test_read_audio_of_a_silent_video_or_an_image_is_refused(inputs: InputSet) -> None:
    read_audio = tools(inputs, SEES_AND_HEARS)["read_audio"]
    silent = call(read_audio, audio_id="video_2", t_start=0, t_end=1)
    assert silent.error is not None and silent.error.code == "NO_AUDIO_STREAM"
    image = call(read_audio, audio_id="image_1", t_start=0, t_end=1)
    assert image.error is not None and image.error.code == "WRONG_KIND"
    assert "valid ids: video_1 (clip.mp4), video_2 (odd.mp4), audio_1 (tones.wav)" in image.text


def test_read_audio_for_a_text_only_model_transcribes_with_times(tmp_path: Path) -> None:
    speech = Path(__file__).resolve().parents[1] / "data" / "speech"
    sample = speech / "two_cities_part1.wav"
    pytest.importorskip("pocketsphinx")
    inputs = InputSet.from_paths([sample])
    result = call(tools(inputs, TEXT_ONLY)["read_audio"], audio_id="audio_1", t_start=0, t_end=6)
    assert result.ok, result.error
    text = result.text
    assert "from 0.0 s to 6.0 s, as text (this model does not take audio)" in text
    spans = re.findall(r"- (\d+\.\d)-(\d+\.\d) s: \"(.+)\"", text)
    assert spans, text
    assert all(0.0 <= float(a) < float(b) <= 6.0 for a, b, _ in spans)
    assert "times" in " ".join(words for _, _, words in spans).lower()


def test_read_image_whole_and_cropped(inputs: InputSet, files: dict[str, Path]) -> None:
    read_image = tools(inputs, SEES_AND_HEARS)["read_image"]
    whole = call(read_image, image_ids=["image_1"])
    assert [type(p) for p in whole.content] == [Text, Image]
    assert whole.content[1] == Image(path=files["image"].resolve())
    assert whole.text == "image_1 (320x240):"
    cropped = call(read_image, image_ids=["photo.png"], crop_box=[10, 20, 110, 70])
    assert cropped.ok, cropped.error
    part = cropped.content[1]
    assert isinstance(part, Image) and part.path is not None and part.path.suffix == ".png"
    saved = load_image(part.path)
    expected = crop(load_image(files["image"]), [10, 20, 110, 70])
    assert saved.size == (100, 50)
    assert np.array_equal(np.asarray(saved), np.asarray(expected))
    assert "cropped to [10, 20, 110, 70] (100x50)" in cropped.text


def test_read_image_accepts_one_id_as_a_string_and_dedupes(inputs: InputSet) -> None:
    read_image = tools(inputs, SEES_AND_HEARS)["read_image"]
    result = call(read_image, image_ids=["image_1", "photo.png"])
    assert [type(p) for p in result.content] == [Text, Image]
    assert call(read_image, image_ids="image_1").ok


def test_derived_files_go_to_the_workspace(inputs: InputSet, tmp_path: Path) -> None:
    got = tools(inputs, SEES_AND_HEARS, workspace=tmp_path)
    crop_result = call(got["read_image"], image_ids=["image_1"], crop_box=[0, 0, 32, 32])
    video_result = call(got["read_video"], video_id="video_1", t_start=0, t_end=1)
    paths = [
        p.path
        for r in (crop_result, video_result)
        for p in r.content
        if isinstance(p, Image | Audio)
    ]
    assert len(paths) == 4  # the crop, two frames, one audio segment
    # The model is shown the cached files (code cannot swap them); the code gets copies.
    assert all(p is not None and tmp_path / "perception" not in p.parents for p in paths)
    copies = sorted((tmp_path / "perception").iterdir())
    assert len(copies) == 4
    assert sorted(c.read_bytes() for c in copies) == sorted(p.read_bytes() for p in paths if p)
    again = call(got["read_video"], video_id="video_1", t_start=0, t_end=1)
    assert [p.model_dump() for p in again.content] == [p.model_dump() for p in video_result.content]


def test_read_image_for_a_text_only_model_reads_the_text(inputs: InputSet) -> None:
    pytest.importorskip("rapidocr")
    read_image = tools(inputs, TEXT_ONLY)["read_image"]
    # synth draws the text below the index band, from x = width/20 and y = height/3 + height/8.
    result = call(read_image, image_ids=["image_1"], crop_box=[0, 100, 320, 160])
    assert result.ok, result.error
    assert all(isinstance(p, Text) for p in result.content)
    assert "cropped to [0, 100, 320, 160] (320x60), as text" in result.text
    assert 'Text in the image (OCR): "OMNI 7"' in result.text


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            {"video_id": "video_1", "t_start": 0, "t_end": 9},
            "TS_OOB",
            "t_end 9.0 s is past the end of clip.mp4 (duration 4.0 s)",
        ),
        (
            {"video_id": "video_1", "t_start": -2, "t_end": 1},
            "TS_OOB",
            "t_start -2.0 s is before the start of clip.mp4 (valid: 0.0 s to 4.0 s)",
        ),
        (
            {"video_id": "video_1", "t_start": 3, "t_end": 1},
            "INVALID_RANGE",
            "t_start 3.0 s is after t_end 1.0 s (requested from clip.mp4); "
            "video_1 runs from 0.0 s to 4.0 s",
        ),
        (
            {"video_id": "video_1", "t_start": 2, "t_end": 2},
            "INVALID_RANGE",
            "the range 2.0 s to 2.0 s of clip.mp4 is empty; video_1 runs from 0.0 s to 4.0 s",
        ),
        ({"video_id": "video_1", "t_start": "soon", "t_end": 2}, "INVALID_ARGS", "t_start"),
        ({"video_id": "../../etc/passwd", "t_start": 0, "t_end": 1}, "UNKNOWN_ID", "valid ids"),
        ({"video_id": "video_7", "t_start": 0, "t_end": 1}, "UNKNOWN_ID", "valid ids: video_1"),
        ({"video_id": "audio_1", "t_start": 0, "t_end": 1}, "WRONG_KIND", "not a video"),
    ],
)
def test_read_video_errors_are_coded_and_actionable(
    inputs: InputSet, args: dict[str, Any], code: str, message: str
) -> None:
    for caps in (SEES_AND_HEARS, TEXT_ONLY, NATIVE_VIDEO):
        result = call(tools(inputs, caps)["read_video"], **args)
        assert result.error is not None and result.error.code == code
        assert message in result.error.message
        assert "\n" not in result.error.message and "Traceback" not in result.error.message


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            {"image_ids": ["image_1"], "crop_box": [0, 0, 400, 10]},
            "INVALID_BOX",
            "crop box [0, 0, 400, 10] is outside image_1 (320x240: left/right in 0..320, "
            "top/bottom in 0..240)",
        ),
        (
            {"image_ids": ["image_1"], "crop_box": [50, 50, 10, 60]},
            "INVALID_BOX",
            "has no area",
        ),
        ({"image_ids": ["image_1"], "crop_box": [1, 2, 3]}, "INVALID_BOX", "4 numbers"),
        ({"image_ids": ["../../etc/passwd"]}, "UNKNOWN_ID", "paths are not accepted"),
        ({"image_ids": ["/etc/passwd"]}, "UNKNOWN_ID", "valid ids: video_1 (clip.mp4)"),
        ({"image_ids": ["video_1"]}, "WRONG_KIND", "valid ids: image_1 (photo.png)"),
        ({"image_ids": []}, "INVALID_ARGS", "give at least one image id (image_1)"),
        ({"crop_box": [0, 0, 1, 1]}, "INVALID_ARGS", "missing required argument 'image_ids'"),
    ],
)
def test_read_image_errors_are_coded_and_actionable(
    inputs: InputSet, args: dict[str, Any], code: str, message: str
) -> None:
    for caps in (SEES_AND_HEARS, TEXT_ONLY):
        result = call(tools(inputs, caps)["read_image"], **args)
        assert result.error is not None and result.error.code == code
        assert message in result.error.message


def test_read_audio_out_of_range_says_what_the_file_allows(inputs: InputSet) -> None:
    result = call(
        tools(inputs, SEES_AND_HEARS)["read_audio"], audio_id="audio_1", t_start=0, t_end=60
    )
    assert result.error is not None and result.error.code == "TS_OOB"
    assert result.error.message == "t_end 60.0 s is past the end of tones.wav (duration 3.0 s)"


def test_missing_perception_backends_fall_back_to_times_and_facts(
    inputs: InputSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION__OCR_BACKEND", "no-such-ocr")
    monkeypatch.setenv("OMNILAB_PERCEPTION__ASR_BACKEND", "no-such-asr")
    get_settings.cache_clear()
    got = tools(inputs, TEXT_ONLY)
    video = call(got["read_video"], video_id="video_1", t_start=0, t_end=1)
    assert video.ok, video.error
    assert (
        "OCR of frames at 0.0, 1.0 s): unavailable (unknown OCR backend 'no-such-ocr'" in video.text
    )
    assert "Speech (ASR): unavailable (unknown ASR backend 'no-such-asr'" in video.text
    image = call(got["read_image"], image_ids=["image_1"])
    assert "Text in the image (OCR): unavailable (unknown OCR backend" in image.text


def test_without_the_perception_package_the_text_says_it_is_unavailable(
    inputs: InputSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m.startswith("omnilab.perception")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "omnilab.perception", None)
    monkeypatch.setitem(sys.modules, "omnilab.perception.errors", None)
    got = tools(inputs, TEXT_ONLY)
    audio = call(got["read_audio"], audio_id="audio_1", t_start=0, t_end=1)
    assert audio.ok, audio.error
    assert "Speech and sounds: unavailable (omnilab.perception cannot load" in audio.text
    image = call(got["read_image"], image_ids=["image_1"])
    assert "Text in the image (OCR): unavailable (omnilab.perception cannot load" in image.text


def test_results_serialise_for_trajectories(inputs: InputSet) -> None:
    result = call(
        tools(inputs, SEES_AND_HEARS)["read_video"], video_id="video_1", t_start=0, t_end=1
    )
    data = json.loads(result.model_dump_json())
    assert ToolResult.model_validate(data) == result
    assert all("data" not in part or part["data"] is None for part in data["content"])


def test_a_missing_task_file_is_a_not_found_error_without_its_path(tmp_path: Path) -> None:
    gone = tmp_path / "private" / "clip.mp4"
    inputs = InputSet([InputFile(id="video_x", kind="video", path=gone, given="clip.mp4")])
    result = call(
        tools(inputs, SEES_AND_HEARS)["read_video"], video_id="video_x", t_start=0, t_end=1
    )
    assert result.error is not None and result.error.code == "NOT_FOUND"
    assert result.error.message == "video_x (clip.mp4) is not available: its file is missing"
