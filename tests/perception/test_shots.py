"""Shot detection: cuts of a generated slide video found at the right frames."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from omnilab.media import MediaError, MediaErrorCode
from omnilab.perception import detect_shots
from omnilab.perception.samples import Slide, make_talk
from omnilab.perception.shots import colour_histogram, histogram_distance


def test_histogram_distance_bounds() -> None:
    red = np.zeros((10, 10, 3), dtype=np.uint8)
    red[..., 0] = 255
    blue = np.zeros((10, 10, 3), dtype=np.uint8)
    blue[..., 2] = 255
    half = red.copy()
    half[:5] = blue[:5]
    assert histogram_distance(colour_histogram(red), colour_histogram(red)) == 0.0
    assert histogram_distance(colour_histogram(red), colour_histogram(blue)) == pytest.approx(1.0)
    assert histogram_distance(colour_histogram(red), colour_histogram(half)) == pytest.approx(0.5)


def test_cuts_of_the_talk_video(talk) -> None:  # type: ignore[no-untyped-def]
    shots = detect_shots(talk.path)
    assert len(shots) == 3
    # Frame-accurate: a cut is reported on the first frame of the new slide (25 fps).
    assert [s.start for s in shots[1:]] == pytest.approx(talk.cuts, abs=0.041)
    assert shots[0].start == 0.0 and shots[-1].end == pytest.approx(10.0, abs=0.05)
    assert all(a.end == b.start for a, b in itertools.pairwise(shots))
    assert [s.index for s in shots] == [0, 1, 2]
    for s in shots:
        assert s.start < s.keyframe < s.end
        assert abs(s.keyframe - (s.start + s.end) / 2) < 0.3


def test_min_shot_and_threshold_suppress_cuts(talk, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert len(detect_shots(talk.path, min_shot=5.0)) == 2  # the 7.0 s cut stays, 3.0 s goes
    assert len(detect_shots(talk.path, threshold=1.0)) == 1
    flash = make_talk(
        tmp_path / "flash.mp4",
        [Slide("A", 2.0), Slide("B", 0.4, background=(250, 250, 250)), Slide("A", 2.0)],
    )
    starts = [s.start for s in detect_shots(flash, min_shot=1.0)]
    assert starts == pytest.approx([0.0, 2.0], abs=0.041)  # the return after 0.4 s is ignored


def test_one_scene_is_one_shot(mute_talk_video: Path, tmp_path: Path) -> None:
    still = make_talk(tmp_path / "still.mp4", [Slide("Same slide", 3.0)])
    shots = detect_shots(still)
    assert len(shots) == 1
    assert shots[0].start == 0.0 and shots[0].end == pytest.approx(3.0, abs=0.05)


def test_progress_reaches_the_end(talk) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[float, float]] = []
    detect_shots(talk.path, on_progress=lambda done, total: seen.append((done, total)))
    assert len(seen) >= 5
    assert seen[-1][0] == seen[-1][1] == pytest.approx(10.0, abs=0.05)


def test_audio_only_and_unreadable(speech_wav: Path, tmp_path: Path) -> None:
    with pytest.raises(MediaError) as err:
        detect_shots(speech_wav)
    assert err.value.code is MediaErrorCode.NO_VIDEO_STREAM
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00" * 4096)
    with pytest.raises(MediaError) as err:
        detect_shots(bad)
    assert err.value.code is MediaErrorCode.CORRUPT
