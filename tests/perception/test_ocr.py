"""OCR: text rendered with Pillow is read back, with boxes around where it was drawn."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from omnilab.media import MediaError, MediaErrorCode
from omnilab.perception import BackendUnavailableError, TextBox, ocr
from omnilab.perception.metrics import char_error_rate
from omnilab.perception.screen_text import merge_screen_text, normalise, same_text

LINES = [
    ((30, 30), "Quarterly revenue 2024"),
    ((30, 120), "Total: 1,234 units"),
    ((420, 30), "Page 7"),
]


def render(
    lines: list[tuple[tuple[int, int], str]], *, size: int = 32
) -> tuple[Image.Image, list[tuple[int, int, int, int]]]:
    """A 640x220 image with each text drawn at its position; returns it and the ink boxes."""
    image = Image.new("RGB", (640, 220), (240, 240, 230))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=size)
    boxes = []
    for xy, text in lines:
        draw.text(xy, text, fill=(10, 10, 10), font=font)
        boxes.append(tuple(int(v) for v in draw.textbbox(xy, text, font=font)))
    return image, boxes  # type: ignore[return-value]


def contains(
    outer: tuple[float, float, float, float], inner: tuple[int, int, int, int], slack: float = 6
) -> bool:
    return (
        outer[0] <= inner[0] + slack
        and outer[1] <= inner[1] + slack
        and outer[2] >= inner[2] - slack
        and outer[3] >= inner[3] - slack
    )


def find(found: list[TextBox], text: str) -> TextBox:
    return min(found, key=lambda b: char_error_rate(text, b.text))


def test_lines_and_boxes() -> None:
    image, ink = render(LINES)
    found = ocr(image)
    assert len(found) == 3
    for (_, text), box in zip(LINES, ink, strict=True):
        hit = find(found, text)
        assert char_error_rate(text, hit.text) < 0.05, hit.text
        assert contains(hit.box, box), (hit.box, box)
        assert 0.8 < hit.confidence <= 1.0
        assert len(hit.polygon) == 4
    # Reading order: the top row left to right, then the next row.
    assert [normalise(b.text)[:4] for b in found] == ["quar", "page", "tota"]


def test_rotated_and_dark_background() -> None:
    image = Image.new("RGB", (640, 240), (20, 30, 80))
    draw = ImageDraw.Draw(image)
    draw.text(
        (60, 90), "Rotated caption here", fill=(255, 230, 0), font=ImageFont.load_default(size=40)
    )
    found = ocr(image.rotate(8, expand=True, fillcolor=(20, 30, 80)))
    assert any(char_error_rate("Rotated caption here", b.text) < 0.1 for b in found), found


def test_image_file_and_confidence_floor(tmp_path: Path) -> None:
    image, _ = render(LINES)
    path = tmp_path / "slide.png"
    image.save(path)
    assert {normalise(b.text) for b in ocr(path)} == {normalise(t) for _, t in LINES}
    assert ocr(path, min_confidence=1.01) == []


def test_blank_image_has_no_text() -> None:
    assert ocr(Image.new("RGB", (320, 240), (128, 128, 128))) == []


def test_not_an_image(speech_wav: Path, tmp_path: Path) -> None:
    with pytest.raises(MediaError) as err:
        ocr(speech_wav)
    assert err.value.code is MediaErrorCode.UNSUPPORTED
    with pytest.raises(MediaError) as err:
        ocr(tmp_path / "missing.png")
    assert err.value.code is MediaErrorCode.NOT_FOUND


def test_tesseract_missing_is_a_clean_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(BackendUnavailableError, match="needs the tesseract program on PATH"):
        ocr(Image.new("RGB", (64, 64)), backend="tesseract")


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
def test_tesseract_reads_lines() -> None:
    image, ink = render(LINES)
    found = ocr(image, backend="tesseract")
    for (_, text), box in zip(LINES, ink, strict=True):
        hit = find(found, text)
        assert char_error_rate(text, hit.text) < 0.1, hit.text
        assert contains(hit.box, box)


def test_screen_text_is_merged_across_frames() -> None:
    def box(text: str, conf: float, top: float = 10) -> TextBox:
        return TextBox(text=text, box=(10, top, 200, top + 30), confidence=conf)

    merged = merge_screen_text(
        [
            (1.0, [box("WELCOME TO OMNILAB", 0.90), box("Chapter 1", 0.95, 60)]),
            (5.0, [box("Welcome to Omnilap", 0.80)]),  # one misread letter: the same line
            (9.0, [box("WELCOME TO OMNILAB!", 0.99), box("The end", 0.97, 60)]),
        ]
    )
    assert [m.text for m in merged] == ["WELCOME TO OMNILAB!", "Chapter 1", "The end"]
    assert merged[0].times == [1.0, 5.0, 9.0] and merged[0].confidence == 0.99
    assert merged[2].times == [9.0]


def test_numbers_keep_screen_text_apart() -> None:
    assert same_text("slide title number 1", "slide title number 1")
    assert not same_text("part 1", "part 2")
    assert not same_text("score 3 1", "score 3 2")
    assert not same_text("slide title number 1", "slide title number 12")
    assert same_text("total 1234 units", "tota 1234 units")
