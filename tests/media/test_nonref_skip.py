"""Exact frames skip the non-reference pictures between requested times, and nothing else.

Skipping must never change what is returned: every test compares the pictures, byte for byte,
with a walk that decodes every picture.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

import av
import pytest

from omnilab.media import frames, probe, synth

picker_module = importlib.import_module("omnilab.media._picker")

FPS = 25


@pytest.fixture(scope="module")
def bframes_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 s with B-frames (x264 veryfast: 3 B-frames, pyramid), 2 s GOP."""
    path = tmp_path_factory.mktemp("nonref") / "b.mp4"
    synth.make_video(path, duration=12.0, fps=FPS, gop_seconds=2.0, audio=False)
    with av.open(str(path)) as c:
        reordered = sum(
            1 for p in c.demux(c.streams.video[0]) if p.pts is not None and p.pts != p.dts
        )
    assert reordered > 50, "the test needs a video with B-frames"
    return path


@pytest.fixture(scope="module")
def hevc_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 s of HEVC (x265: B-frames, non-reference ones coded as such), 2 s GOP."""
    path = tmp_path_factory.mktemp("nonref") / "h.mp4"
    return synth.make_video(
        path, duration=8.0, gop_seconds=2.0, audio=False, codec="libx265", preset="ultrafast"
    )


def walk(
    path: Path, times: list[float], *, threads: str = "NONE"
) -> tuple[list[tuple[int, str]], int, bool]:
    """(pts, picture digest) shown at each time, pictures decoded, whether skipping stayed on."""
    info = probe(path)
    with av.open(str(path)) as container:
        picker = picker_module.Picker(
            container, info, keyframes_only=False, threads=threads, seek_gap=2.0
        )
        shown = [
            (pts, hashlib.sha256(frame.to_ndarray(format="rgb24").tobytes()).hexdigest())
            for _, (pts, frame) in picker.pick(times)
        ]
        return shown, picker.decoded_count, picker.skip_nonref


SPARSE = [0.3, 1.37, 2.9, 5.01, 6.5, 9.99, 11.9]
# Every 0.22 s: near requests decode on, and some land on B-frames.
DENSE = [round(0.05 + 0.22 * i, 3) for i in range(50)]


@pytest.mark.parametrize("times", [SPARSE, DENSE], ids=["sparse", "dense"])
@pytest.mark.parametrize("threads", ["NONE", "AUTO"])
def test_skipping_returns_the_same_pictures_and_decodes_fewer(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch, times: list[float], threads: str
) -> None:
    skipped, skipped_count, still_on = walk(bframes_video, times, threads=threads)
    assert still_on  # a constant-rate video never needs the fall-back
    monkeypatch.setattr(picker_module, "_NONREF_CODECS", frozenset())
    full, full_count, _ = walk(bframes_video, times, threads=threads)
    assert skipped == full
    # About half of x264's pictures are B-frames nothing refers to.
    assert skipped_count < 0.8 * full_count, (skipped_count, full_count)


def test_a_skipped_picture_that_would_be_shown_is_decoded_again(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Half a frame into each picture of a second: some requests land on non-reference pictures.
    times = [round(4.0 + (i + 0.5) / FPS, 4) for i in range(FPS)]
    monkeypatch.setattr(picker_module, "_NONREF_CODECS", frozenset())
    full, _, _ = walk(bframes_video, times)
    monkeypatch.undo()
    # A window that ends before each requested time makes the walk skip the very picture shown
    # (what a variable-rate stream with a long gap does): the check must catch it.
    monkeypatch.setattr(picker_module, "_NEAR_FRAMES", -0.9)
    skipped, _, still_on = walk(bframes_video, times)
    assert not still_on
    assert skipped == full


def test_public_frames_unchanged_by_skipping(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_skip = frames(bframes_video, num=40)
    monkeypatch.setattr(picker_module, "_NONREF_CODECS", frozenset())
    without = frames(bframes_video, num=40)
    assert [(f.timestamp, f.image.tobytes()) for f in with_skip] == [
        (f.timestamp, f.image.tobytes()) for f in without
    ]
    assert [synth.read_index(f.image) for f in with_skip] == [
        round(f.timestamp * FPS) for f in with_skip
    ]


def test_hevc_skipping_returns_the_same_pictures(
    hevc_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = [0.3, 1.37, 2.9, 4.01, 5.5, 7.9]
    skipped, skipped_count, still_on = walk(hevc_video, times)
    assert still_on
    monkeypatch.setattr(picker_module, "_NONREF_CODECS", frozenset())
    full, full_count, _ = walk(hevc_video, times)
    assert skipped == full
    assert skipped_count < 0.8 * full_count, (skipped_count, full_count)
