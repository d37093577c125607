"""Contact sheets: grid geometry, exact tiles in reading order, timestamp labels, video sampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from omnilab.config import get_settings
from omnilab.media import MediaError, MediaErrorCode, synth
from omnilab.media.image import resize
from omnilab.media.sheet import GAP, contact_sheet, format_timestamp, sheet_times, video_sheet
from omnilab.media.video import Frame


def _frame(index: int, t: float, size: tuple[int, int] = (320, 240)) -> Frame:
    image = Image.fromarray(synth.index_pattern(index, *size))
    return Frame(image=image, timestamp=t, requested=t, keyframe=False)


def _cell(sheet: Image.Image, i: int, columns: int, cell: tuple[int, int]) -> Image.Image:
    row, col = divmod(i, columns)
    x0, y0 = GAP + col * (cell[0] + GAP), GAP + row * (cell[1] + GAP)
    return sheet.crop((x0, y0, x0 + cell[0], y0 + cell[1]))


def _diff(a: Image.Image, b: Image.Image) -> np.ndarray:
    return np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).max(axis=-1)


@pytest.mark.parametrize(
    ("n", "columns", "grid"),
    [
        (1, None, (1, 1)),
        (4, None, (2, 2)),
        (5, None, (3, 2)),
        (16, None, (4, 4)),
        (17, None, (5, 4)),
        (5, 5, (5, 1)),
        (5, 2, (2, 3)),
        (3, 10, (3, 1)),
    ],
)
def test_grid_size(n: int, columns: int | None, grid: tuple[int, int]) -> None:
    sheet = contact_sheet([_frame(i, i) for i in range(n)], columns=columns, tile_edge=160)
    cols, rows = grid
    assert sheet.mode == "RGB"
    assert sheet.size == (cols * 160 + (cols + 1) * GAP, rows * 120 + (rows + 1) * GAP)


def test_tiles_show_the_right_frames_in_reading_order() -> None:
    indices = [3, 141, 7, 900, 65000]
    frames = [_frame(idx, k * 1.5) for k, idx in enumerate(indices)]
    sheet = contact_sheet(frames, tile_edge=160)
    read = [synth.read_index(_cell(sheet, i, 3, (160, 120))) for i in range(len(indices))]
    assert read == indices
    # The sixth cell of the 3x2 grid is empty background.
    empty = np.asarray(_cell(sheet, 5, 3, (160, 120)))
    assert (empty == (16, 16, 16)).all()


def test_tile_is_the_resized_frame_except_for_its_label() -> None:
    frame = _frame(5, 83.42)
    sheet = contact_sheet([frame], tile_edge=160)
    diff = _diff(sheet.crop((GAP, GAP, GAP + 160, GAP + 120)), resize(frame.image, 160))
    changed_rows, changed_cols = np.nonzero(diff > 40)
    # Pixels differ only in a label box in the bottom-left corner, and they do differ there.
    assert changed_rows.size > 100
    assert changed_rows.min() >= 120 - 30 and changed_cols.max() < 100
    assert diff[:80].max() == 0


def test_labels_show_the_timestamp() -> None:
    same = [_frame(5, 1.0), _frame(5, 1.0), _frame(5, 62.5)]
    sheet = contact_sheet(same, columns=3, tile_edge=160)
    first, second, third = (_cell(sheet, i, 3, (160, 120)) for i in range(3))
    assert _diff(first, second).max() == 0  # same picture and time: identical cells
    label_diff = _diff(first, third)
    assert label_diff.max() > 100  # "00:01.0" and "01:02.5" print differently
    assert label_diff[:80].max() == 0  # and only the labels differ


def test_aspect_is_kept_for_mixed_sizes() -> None:
    sheet = contact_sheet([_frame(1, 0.0), _frame(2, 1.0, size=(240, 320))], tile_edge=160)
    # Cells fit the largest tile of each axis: 160 wide (landscape), 160 tall (portrait).
    assert sheet.size == (2 * 160 + 3 * GAP, 160 + 2 * GAP)
    landscape, portrait = (_cell(sheet, i, 2, (160, 160)) for i in range(2))
    assert synth.read_index(landscape.crop((0, 20, 160, 140))) == 1
    assert synth.read_index(portrait.crop((20, 0, 140, 160))) == 2
    # Bars above the landscape tile and beside the portrait one are background.
    assert (np.asarray(landscape)[:20] == (16, 16, 16)).all()
    assert (np.asarray(portrait)[:, :20] == (16, 16, 16)).all()


def test_small_frames_are_not_enlarged() -> None:
    sheet = contact_sheet([_frame(9, 0.0, size=(64, 48))] * 2, tile_edge=320)
    assert sheet.size == (2 * 64 + 3 * GAP, 48 + 2 * GAP)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"columns": 0}, "columns"), ({"tile_edge": 0}, "tile_edge")],
)
def test_bad_arguments(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        contact_sheet([_frame(0, 0.0)], **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one frame"):
        contact_sheet([])


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "00:00.0"),
        (83.42, "01:23.4"),
        (59.96, "01:00.0"),
        (599.9, "09:59.9"),
        (3723.05, "1:02:03.0"),
        (36000.0, "10:00:00.0"),
        (-0.01, "00:00.0"),
    ],
)
def test_format_timestamp(seconds: float, text: str) -> None:
    assert format_timestamp(seconds) == text


def test_sheet_times_are_span_centres() -> None:
    assert sheet_times(4.0, 4) == [0.5, 1.5, 2.5, 3.5]
    assert sheet_times(10.0, 1) == [5.0]


def test_video_sheet_samples_span_centres(video: Path) -> None:
    sheet = video_sheet(video, num=4, tile_edge=160)
    assert sheet.size == (2 * 160 + 3 * GAP, 2 * 120 + 3 * GAP)
    # 4 s at 25 fps: the frames shown at 0.5, 1.5, 2.5 and 3.5 s.
    read = [synth.read_index(_cell(sheet, i, 2, (160, 120))) for i in range(4)]
    assert read == [12, 37, 62, 87]


def test_video_sheet_rotated_video(tmp_path: Path) -> None:
    path = synth.make_video(tmp_path / "phone.mp4", duration=2.0, rotation=90, audio=False)
    sheet = video_sheet(path, num=2, columns=2, tile_edge=160)
    assert sheet.size == (2 * 120 + 3 * GAP, 160 + 2 * GAP)  # upright portrait tiles


def test_video_sheet_errors(audio_file: Path, video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MediaError) as err:
        video_sheet(audio_file)
    assert err.value.code is MediaErrorCode.NO_VIDEO_STREAM
    with pytest.raises(MediaError) as err:
        video_sheet(video, num=0)
    assert err.value.code is MediaErrorCode.INVALID_RANGE
    monkeypatch.setenv("OMNILAB_MEDIA__MAX_FRAMES", "8")
    get_settings.cache_clear()
    with pytest.raises(MediaError) as err:
        video_sheet(video, num=9)
    assert err.value.code is MediaErrorCode.TOO_MANY_FRAMES
    assert "OMNILAB_MEDIA__MAX_FRAMES" in err.value.message
