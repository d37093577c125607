"""The input summary names each media part, with the span of audio and video."""

from __future__ import annotations

from pathlib import Path

from omnilab.content import Audio, Image, Video
from omnilab.models import Message
from omnilab.models.events import summarize_input


def test_media_names_carry_spans_of_audio_and_video_only() -> None:
    message = Message.user(
        "look",
        Image(path=Path("a.png")),
        Video(path=Path("v.mp4"), start=1.5, end=3),
        Audio(path=Path("s.wav"), start=2),
        Video(path=Path("w.mp4")),
    )
    assert summarize_input([message], []).media == ["a.png", "v.mp4[1.5-3]", "s.wav[2-]", "w.mp4"]
