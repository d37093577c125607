"""The ``ota`` agent on models that lack a modality: frames as OCR text (plus a perception
model's description), audio as ASR and sound events, clips as frames plus audio; the run's
config says which conversions are active."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentkit import TEXT_ONLY, VISION, scripted
from test_ota import answer, frames, media, run_ota, span, turn

from omnilab.content import Audio, Image, Text
from omnilab.media import synth
from omnilab.models.capabilities import Capabilities
from omnilab.models.providers import scripted as s


@pytest.fixture(scope="session")
def titled(media_dir: Path) -> Path:
    """6 s at 2 fps, 320x240, "OMNILAB" drawn on every frame, with tones."""
    return synth.make_video(media_dir / "titled.mp4", duration=6.0, fps=2, text="OMNILAB")


def test_a_text_only_model_gets_text_for_every_medium(tmp_path: Path, titled: Path) -> None:
    ran = run_ota(
        tmp_path,
        [
            turn(frames(0, 2, 2)),
            turn(span("get_audio", 0, 3)),
            turn(span("get_clip", 1, 3)),
            turn(answer("OMNILAB"), 0.95),
        ],
        titled,
        caps=TEXT_ONLY,
    )
    assert ran.saved.status == "answered"
    got_frames, got_audio, got_clip = (ran.request(i)[-1] for i in (1, 2, 3))
    for message in (got_frames, got_audio, got_clip):
        assert not media(message)  # nothing a text-only model cannot take
    assert got_frames.content[0] == Text(
        text="Frames 0.00s-2.00s (num=2). Timestamps: [0.00s, 2.00s]"
    )
    assert "On-screen text (OCR of frames at 0.0, 2.0 s)" in got_frames.text
    assert "OMNILAB" in got_frames.text
    assert "Speech (ASR" in got_audio.text and "Sound events:" in got_audio.text
    assert "3 frames of the clip:" in got_clip.text and "On-screen text" in got_clip.text
    assert "The clip's sound:" in got_clip.text and "Sound events:" in got_clip.text
    # the evidence is purged like media: later requests keep the labels only
    later = ran.request(3)
    assert "On-screen text" not in "".join(m.text for m in later[:-1])
    start = ran.saved.run_start
    assert start is not None
    assert start.config["conversions"] == {
        "frames": "ocr",
        "audio": "asr+events",
        "clip": "frames as ocr + audio as asr+events",
    }
    assert start.config["mode"].startswith("frames: ocr; audio: asr+events")


def test_a_perception_model_describes_frames_for_a_text_only_agent(
    tmp_path: Path, titled: Path
) -> None:
    eye, eye_adapter = scripted([s.text("At 0.00s a white card reads OMNILAB.")], caps=VISION)
    ran = run_ota(
        tmp_path,
        [turn(frames(0, 2, 2)), turn(answer("OMNILAB"), 0.95)],
        titled,
        caps=TEXT_ONLY,
        roles={"perception": eye},
    )
    feedback = ran.request(1)[-1].text
    assert "Description of the frames (perception model):" in feedback
    assert "a white card reads OMNILAB" in feedback
    (asked,) = eye_adapter.requests
    assert len([p for p in asked[0][-1].content if isinstance(p, Image)]) == 2
    roles = [c.role for c in ran.saved.model_calls]
    assert roles == ["agent", "perception", "agent"]
    start = ran.saved.run_start
    assert start is not None and start.config["conversions"]["frames"] == "ocr+perception"


def test_a_model_without_video_gets_a_clip_as_frames_and_audio(
    tmp_path: Path, titled: Path
) -> None:
    caps = Capabilities(image=True, audio=True)
    ran = run_ota(
        tmp_path,
        [turn(span("get_clip", 1, 4)), turn(answer("A"), 0.95)],
        titled,
        caps=caps,
        clip_fps=1.0,
    )
    got = ran.request(1)[-1]
    assert got.content[0] == Text(text="Clip 1.00s-4.00s")
    assert media(got) == ["image"] * 4 + ["audio"]
    (wav,) = [p for p in got.content if isinstance(p, Audio)]
    assert wav.mime_type == "audio/wav"
    start = ran.saved.run_start
    assert start is not None and start.config["conversions"]["clip"] == (
        "frames as images + audio as audio"
    )


def test_a_perception_model_without_images_is_refused(tmp_path: Path, titled: Path) -> None:
    from omnilab.agents import AgentConfigError

    deaf, _ = scripted([], caps=TEXT_ONLY)
    with pytest.raises(AgentConfigError, match="does not take images"):
        run_ota(tmp_path, [], titled, caps=TEXT_ONLY, roles={"perception": deaf})
