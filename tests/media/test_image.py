"""load_image (EXIF orientation), crop (exact pixels, box validation) and resize (aspect, no upscale)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from omnilab.media import MediaError, MediaErrorCode, synth
from omnilab.media.image import crop, load_image, resize

# Index 1 lights only bit 0: the top-left block of the stored pixels is white, the rest of the
# band black, the lower two thirds the background colour (40 + 7, 60, 90).
WHITE, BLACK, BACKGROUND = (255, 255, 255), (0, 0, 0), (47, 60, 90)

# What undoes each EXIF orientation, written out independently of Pillow's own table.
UNDO = {
    1: None,
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,  # shown turned 90° clockwise; turn it back counter-clockwise
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


def _pixel(image: Image.Image, x: int, y: int) -> tuple[int, ...]:
    value = image.getpixel((x, y))
    assert isinstance(value, tuple)
    return value


def _near(a: tuple[int, ...], b: tuple[int, ...], tol: int = 12) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a, b, strict=True))


def test_load_image_turns_orientation_6_upright(tmp_path: Path) -> None:
    path = synth.make_image(tmp_path / "phone.png", size=(320, 240), exif_orientation=6, index=1)
    image = load_image(path)
    assert image.mode == "RGB"
    assert image.size == (240, 320)
    # Turned clockwise: the stored top-left block is now top-right, the band runs down the right.
    assert _near(_pixel(image, 235, 5), WHITE)
    assert _near(_pixel(image, 235, 314), BLACK)
    assert _near(_pixel(image, 5, 5), BACKGROUND)
    assert _near(_pixel(image, 5, 314), BACKGROUND)


@pytest.mark.parametrize("orientation", sorted(UNDO))
@pytest.mark.parametrize("ext", [".png", ".jpg"])
def test_load_image_applies_every_orientation(tmp_path: Path, orientation: int, ext: str) -> None:
    index = 0b1010_0000_0110_0011  # asymmetric, so any wrong flip reads as another number
    path = synth.make_image(
        tmp_path / f"o{orientation}{ext}",
        size=(320, 240),
        exif_orientation=orientation,
        index=index,
    )
    image = load_image(path)
    undo = UNDO[orientation]
    stored = image if undo is None else image.transpose(undo)
    assert stored.size == (320, 240)
    assert synth.read_index(stored) == index


def test_load_image_without_exif(image_file: Path) -> None:
    image = load_image(image_file)
    assert image.size == (320, 240)
    assert synth.read_index(image) == 5


def test_load_image_refuses_video(video: Path) -> None:
    with pytest.raises(MediaError) as err:
        load_image(video)
    assert err.value.code is MediaErrorCode.UNSUPPORTED
    assert "video.mp4 is a video file, not an image" in err.value.message


def test_load_image_missing(tmp_path: Path) -> None:
    with pytest.raises(MediaError) as err:
        load_image(tmp_path / "gone.png")
    assert err.value.code is MediaErrorCode.NOT_FOUND


def _numbered(width: int = 64, height: int = 48) -> Image.Image:
    # Every pixel distinct, so a shifted crop cannot match by accident.
    ys, xs = np.mgrid[0:height, 0:width]
    rgb = np.stack([xs, ys, (xs + ys * width) % 256], axis=-1).astype(np.uint8)
    return Image.fromarray(rgb)


@pytest.mark.parametrize(
    "box", [(0, 0, 64, 48), (10, 5, 30, 25), (63, 47, 64, 48), (0.4, 1.6, 20.2, 9.5)]
)
def test_crop_returns_exactly_the_box(box: tuple[float, float, float, float]) -> None:
    image = _numbered()
    left, top, right, bottom = (round(v) for v in box)
    out = crop(image, box)
    assert out.size == (right - left, bottom - top)
    assert np.array_equal(np.asarray(out), np.asarray(image)[top:bottom, left:right])


@pytest.mark.parametrize(
    ("box", "words"),
    [
        ((-1, 0, 10, 10), "outside"),
        ((0, 0, 65, 10), "outside"),
        ((0, 0, 10, 49), "outside"),
        ((100, 100, 200, 200), "outside"),
        ((10, 10, 10, 20), "no area"),
        ((10, 20, 30, 20), "no area"),
        ((30, 10, 10, 20), "no area"),
        ((1, 2, 3), "4 numbers"),
        ((1, 2, 3, 4, 5), "4 numbers"),
        ((), "4 numbers"),
        ((0, 0, float("nan"), 10), "finite"),
        ((0, 0, float("inf"), 10), "finite"),
    ],
)
def test_crop_rejects_bad_boxes(box: tuple[float, ...], words: str) -> None:
    with pytest.raises(MediaError) as err:
        crop(_numbered(), box, name="shot.png")
    assert err.value.code is MediaErrorCode.INVALID_BOX
    assert words in err.value.message
    # The message says what the valid range is, so a model can correct its box.
    assert "shot.png (64x48" in err.value.message
    assert "0..64" in err.value.message and "0..48" in err.value.message


@pytest.mark.parametrize(
    ("size", "max_edge", "expected"),
    [
        ((640, 480), 320, (320, 240)),
        ((480, 640), 320, (240, 320)),
        ((1000, 10), 100, (100, 1)),
        ((333, 200), 100, (100, 60)),
        ((10, 1000), 50, (1, 50)),
    ],
)
def test_resize_keeps_aspect(
    size: tuple[int, int], max_edge: int, expected: tuple[int, int]
) -> None:
    assert resize(Image.new("RGB", size), max_edge).size == expected


@pytest.mark.parametrize("max_edge", [320, 1000, None])
def test_resize_never_enlarges(max_edge: int | None) -> None:
    image = _numbered(320, 200)
    out = resize(image, max_edge)
    assert out.size == (320, 200)
    assert np.array_equal(np.asarray(out), np.asarray(image))


def test_resize_keeps_content(image_file: Path) -> None:
    small = resize(load_image(image_file), 80)
    assert small.size == (80, 60)
    assert synth.read_index(small) == 5
