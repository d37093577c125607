"""What keeps a digest cheap: each distinct picture is read once, VAD runs once per file."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from PIL import Image, ImageDraw, ImageFont

from omnilab.config import get_settings
from omnilab.perception import DigestOptions, digest, vad
from omnilab.perception.screen_text import read_frames, same_picture
from omnilab.perception.types import TextBox


def slide(text: str, background: tuple[int, int, int] = (20, 40, 90)) -> Image.Image:
    image = Image.new("RGB", (640, 360), background)
    font = ImageFont.load_default(size=28)
    ImageDraw.Draw(image).text((40, 150), text, fill=(255, 255, 255), font=font)
    return image


def recoded(image: Image.Image, quality: int) -> Image.Image:
    """The picture after a lossy round trip, as a video frame of the same slide would be."""
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


def test_same_picture_ignores_coding_noise_but_not_a_changed_digit() -> None:
    a = slide("Quarterly revenue 2023")
    assert same_picture(a, recoded(a, 85))
    assert not same_picture(a, slide("Quarterly revenue 2024"))
    assert not same_picture(a, slide("Quarterly revenue 2023").rotate(180))
    assert not same_picture(a, a.resize((320, 320)))  # another shape is another picture
    # Two slides of a generated talk: red and green of nearly the same grey, one small digit
    # apart (a greyscale block comparison took them for one picture).
    red, green = (120, 30, 30), (10, 90, 40)
    assert not same_picture(slide("Part 2", red), slide("Part 3", green))
    assert not same_picture(slide("Part 2", red), slide("Part 3", red))


def test_read_frames_reads_each_distinct_picture_once() -> None:
    first, second = slide("Part 1 Introduction"), slide("Part 2 Results")
    frames = [
        (0.0, first),
        (30.0, recoded(first, 90)),
        (60.0, second),
        (90.0, recoded(first, 85)),
    ]
    read: list[Image.Image] = []

    def fake_ocr(image: Image.Image) -> list[TextBox]:
        read.append(image)
        return [TextBox(text=f"reading {len(read)}", box=(0, 0, 1, 1), confidence=0.9)]

    got = read_frames(frames, fake_ocr)
    assert read == [first, second]
    assert [(t, [b.text for b in boxes]) for t, boxes in got] == [
        (0.0, ["reading 1"]),
        (30.0, ["reading 1"]),
        (60.0, ["reading 2"]),
        (90.0, ["reading 1"]),
    ]


def test_speech_probabilities_are_computed_once_per_samples_array(
    monkeypatch: pytest.MonkeyPatch, speech: NDArray[np.float32]
) -> None:
    calls: list[int] = []
    real = vad._speech_probs

    def counting(samples: NDArray[np.float32]) -> NDArray[np.float32]:
        calls.append(samples.size)
        return real(samples)

    monkeypatch.setattr(vad, "_speech_probs", counting)
    piece = speech[: 3 * 16_000].copy()
    first = vad.speech_probs(piece)
    assert vad.speech_probs(piece) is first and len(calls) == 1
    assert not first.flags.writeable  # shared, so nobody may change it
    # Equal content in another array is computed again (identity, not content, is the key).
    assert np.array_equal(vad.speech_probs(piece.copy()), first) and len(calls) == 2


def test_digest_runs_vad_once_for_transcript_and_events(
    monkeypatch: pytest.MonkeyPatch, short_speech: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(tmp_path))
    get_settings.cache_clear()
    calls: list[int] = []
    real = vad._speech_probs
    monkeypatch.setattr(vad, "_speech_probs", lambda s: calls.append(s.size) or real(s))
    f = digest([short_speech], options=DigestOptions()).files[0]
    assert f.transcript is not None and f.transcript.text and f.events
    assert calls == [5 * 16_000]
