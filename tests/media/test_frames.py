"""Exact frame extraction: every check reads the frame index that synth drew into the picture."""

from __future__ import annotations

import importlib
import math
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from omnilab.config import get_settings
from omnilab.media import Frame, MediaError, MediaErrorCode, frames, frames_at, probe, synth

FPS = 25
DURATION = 4.0  # the conftest ``video``: 4 s, 25 fps, 320x240, 1 s GOP
LAST_INDEX = round(DURATION * FPS) - 1
frames_module = importlib.import_module("omnilab.media.video")
plan_module = importlib.import_module("omnilab.media._plan")


def shown_at(t: float, *, fps: int = FPS, count: int = LAST_INDEX + 1) -> int:
    """Index of the frame a player displays at ``t``."""
    return min(count - 1, max(0, math.floor(t * fps + 1e-6)))


def assert_exact(frame: Frame, *, fps: int = FPS, count: int = LAST_INDEX + 1) -> None:
    index = synth.read_index(frame.image)
    assert index == shown_at(frame.requested, fps=fps, count=count), frame
    assert frame.timestamp == pytest.approx(index / fps, abs=1e-6)
    if frame.requested < (count - 1) / fps:
        assert 0 <= frame.requested - frame.timestamp < 1 / fps + 1e-6
    assert frame.image.mode == "RGB"


def write_faststart(path: Path, *, seconds: float = 4.0, gop: int = FPS) -> Path:
    """An MP4 with its index (moov) before the data, as streaming-ready files have it."""
    with av.open(str(path), "w", options={"movflags": "faststart"}) as out:
        vs = out.add_stream("libx264", rate=FPS)
        assert isinstance(vs, av.video.stream.VideoStream)
        vs.width, vs.height, vs.pix_fmt = 320, 240, "yuv420p"
        vs.codec_context.gop_size = gop
        for i in range(round(seconds * FPS)):
            frame = av.VideoFrame.from_ndarray(synth.index_pattern(i, 320, 240), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, FPS)
            for packet in vs.encode(frame):
                out.mux(packet)
        for packet in vs.encode(None):
            out.mux(packet)
    return path


def cut_in_half(src: Path, dst: Path) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 2])
    return dst


def code_of(call: Callable[[], object]) -> MediaErrorCode:
    with pytest.raises(MediaError) as err:
        call()
    assert err.value.message  # a one-line message for the model, never empty
    return err.value.code


# --- exact times ------------------------------------------------------------------------------


def test_frames_uniform_with_both_ends(video: Path, tmp_dir_guard: Path) -> None:
    got = frames(video, num=9)
    assert [f.requested for f in got] == pytest.approx(list(np.linspace(0, DURATION, 9)))
    for f in got:
        assert_exact(f)
    assert synth.read_index(got[0].image) == 0
    assert synth.read_index(got[-1].image) == LAST_INDEX
    assert got[0].keyframe and got[0].timestamp == 0.0


def test_frames_sub_range(video: Path) -> None:
    got = frames(video, 1.1, 2.3, num=7)
    assert got[0].requested == 1.1 and got[-1].requested == pytest.approx(2.3)
    assert [synth.read_index(f.image) for f in got] == [27, 32, 37, 42, 47, 52, 57]
    for f in got:
        assert_exact(f)


def test_single_frame_and_empty_range(video: Path) -> None:
    (one,) = frames(video, 2.0, 2.0, num=1)
    assert synth.read_index(one.image) == 50 and one.keyframe
    same = frames(video, 1.5, 1.5, num=3)
    assert {synth.read_index(f.image) for f in same} == {37}


@pytest.mark.parametrize("t", [DURATION, DURATION - 0.001, DURATION + 0.02, 3.96, 3.95])
def test_last_frame_reachable(video: Path, t: float) -> None:
    (f,) = frames_at(video, [t])
    assert synth.read_index(f.image) == shown_at(t)
    assert f.requested == t


def test_every_frame_near_the_end(video: Path) -> None:
    times = [i / FPS + 0.013 for i in range(80, LAST_INDEX + 1)]
    got = frames_at(video, times)
    assert [synth.read_index(f.image) for f in got] == list(range(80, LAST_INDEX + 1))


def test_frames_at_unsorted_and_duplicates_in_request_order(video: Path) -> None:
    times = [3.3, 0.0, 1.02, 3.3, 0.5, 1.02, 2.999, 0.04]
    got = frames_at(video, times)
    assert [f.requested for f in got] == times
    assert [synth.read_index(f.image) for f in got] == [82, 0, 25, 82, 12, 25, 74, 1]
    for f in got:
        assert_exact(f)
    # Repeated requests share the decoded picture instead of converting it again.
    assert got[0].image is got[3].image


def test_numpy_times_accepted(video: Path) -> None:
    got = frames_at(video, np.array([0.4, 2.2]))  # type: ignore[arg-type]
    assert [synth.read_index(f.image) for f in got] == [10, 55]


def test_frame_is_immutable(video: Path) -> None:
    (f,) = frames_at(video, [1.0])
    with pytest.raises(AttributeError):
        f.timestamp = 2.0  # type: ignore[misc]


# --- decode strategy --------------------------------------------------------------------------


@pytest.fixture()
def count_seeks(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    calls: list[float | None] = []
    real = frames_module._Picker._seek

    def counting(self: object, t: float | None) -> None:
        calls.append(t)
        real(self, t)

    monkeypatch.setattr(frames_module._Picker, "_seek", counting)
    return calls


def test_dense_and_sparse_paths_agree(
    video: Path, monkeypatch: pytest.MonkeyPatch, count_seeks: list[float | None]
) -> None:
    times = [0.3, 0.31, 0.9, 1.05, 1.9, 2.0, 2.7, 3.98, 4.0, 0.02]
    monkeypatch.setattr(plan_module, "UNKNOWN_GOP_SECONDS", math.inf)
    dense_info = probe(video).model_copy(update={"keyframe_interval": None})
    monkeypatch.setattr(frames_module, "probe", lambda _p: dense_info)
    dense = frames_at(video, times)
    assert len(count_seeks) == 1  # one seek to the first time, then decoded straight through

    count_seeks.clear()
    sparse_info = probe(video).model_copy(update={"keyframe_interval": 1e-9})
    monkeypatch.setattr(frames_module, "probe", lambda _p: sparse_info)
    sparse = frames_at(video, times)
    assert len(count_seeks) == len(set(times)) - 1  # 1.9 and 2.0 share the frame after 1.9

    for a, b in zip(dense, sparse, strict=True):
        assert_exact(a)
        assert (a.timestamp, a.keyframe) == (b.timestamp, b.keyframe)
        assert np.array_equal(np.asarray(a.image), np.asarray(b.image))


def test_default_strategy_seeks_only_for_far_times(
    video: Path, count_seeks: list[float | None]
) -> None:
    frames_at(video, [0.1, 0.5, 0.9, 3.5, 3.6])
    assert count_seeks == [0.1, 3.5]


# --- keyframes only ---------------------------------------------------------------------------


def test_keyframes_only_returns_gop_starts(video: Path) -> None:
    got = frames(video, num=17, keyframes_only=True)
    for f in got:
        index = synth.read_index(f.image)
        assert index % FPS == 0  # 1 s GOP
        assert index == FPS * min(3, math.floor(f.requested))  # keyframes at 0, 1, 2, 3 s
        assert f.keyframe
        assert f.timestamp == pytest.approx(index / FPS)
        assert 0 <= f.requested - f.timestamp <= 1.0 + 1e-6


def test_keyframes_only_long_gop(media_dir: Path) -> None:
    path = synth.make_video(media_dir / "gop2.mp4", duration=6.0, gop_seconds=2.0, audio=False)
    got = frames_at(path, [5.9, 0.1, 2.0, 3.99], keyframes_only=True)
    assert [synth.read_index(f.image) for f in got] == [100, 0, 50, 50]


# --- size and rotation ------------------------------------------------------------------------


def test_max_edge_keeps_aspect(video: Path) -> None:
    (small,) = frames_at(video, [2.4], max_edge=100)
    assert small.image.size == (100, 75)
    assert synth.read_index(small.image) == 60
    (same,) = frames_at(video, [2.4], max_edge=1000)  # never enlarged
    assert same.image.size == (320, 240)


def test_max_edge_from_settings(video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_MEDIA__MAX_EDGE", "64")
    get_settings.cache_clear()
    (f,) = frames_at(video, [0.0])
    assert f.image.size == (64, 48)
    (g,) = frames_at(video, [0.0], max_edge=160)  # an explicit value wins
    assert g.image.size == (160, 120)


@pytest.mark.parametrize("rotation", [90, 270, 180])
def test_rotation_matches_ffmpeg_autorotate(media_dir: Path, tmp_path: Path, rotation: int) -> None:
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    path = synth.make_video(
        media_dir / f"rot{rotation}.mp4", duration=1.0, size=(320, 240), rotation=rotation
    )
    info = probe(path)
    (f,) = frames_at(path, [0.4])
    assert f.image.size == (info.width, info.height)
    assert synth.read_index(f.image.transpose(_undo(rotation))) == 10

    png = tmp_path / "ref.png"
    cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-ss", "0.4", "-i", str(path)]
    subprocess.run([*cmd, "-frames:v", "1", str(png)], check=True, capture_output=True)
    with Image.open(png) as ref_image:
        ref = np.asarray(ref_image.convert("RGB"), dtype=np.int16)
    ours = np.asarray(f.image, dtype=np.int16)
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).mean() < 2.0
    # The check can fail: turned the other way the picture differs a lot.
    other = np.asarray(f.image.transpose(Image.Transpose.ROTATE_180), dtype=np.int16)
    assert np.abs(other - ref).mean() > 20.0


def _undo(rotation: int) -> Image.Transpose:
    return {
        90: Image.Transpose.ROTATE_270,
        180: Image.Transpose.ROTATE_180,
        270: Image.Transpose.ROTATE_90,
    }[rotation]


def test_rotated_with_max_edge(media_dir: Path) -> None:
    path = synth.make_video(media_dir / "rot90-small.mp4", duration=1.0, rotation=90)
    (f,) = frames_at(path, [0.0], max_edge=100)
    assert f.image.size == (75, 100)


# --- containers -------------------------------------------------------------------------------


@pytest.mark.parametrize("ext", [".mp4", ".mkv", ".webm", ".mov"])
def test_containers(media_dir: Path, ext: str) -> None:
    path = synth.make_video(media_dir / f"c{ext}", duration=2.0, preset="ultrafast")
    count = 2 * FPS
    times = [0.0, 1.37, 0.52, 1.0, 1.999, 2.0]
    got = frames_at(path, times)
    for f in got:
        assert_exact(f, count=count)
    ends = frames(path, num=3)
    assert [synth.read_index(f.image) for f in ends] == [0, 25, count - 1]
    keys = frames_at(path, [1.5], keyframes_only=True)
    assert synth.read_index(keys[0].image) == 25 and keys[0].keyframe


def test_video_without_audio(silent_video: Path) -> None:
    got = frames(silent_video, num=3)
    assert [synth.read_index(f.image) for f in got] == [0, 25, 49]


# --- errors -----------------------------------------------------------------------------------


def test_not_a_video(image_file: Path, audio_file: Path) -> None:
    assert code_of(lambda: frames(image_file)) is MediaErrorCode.NO_VIDEO_STREAM
    assert code_of(lambda: frames_at(audio_file, [0.0])) is MediaErrorCode.NO_VIDEO_STREAM


def test_times_out_of_bounds(video: Path) -> None:
    assert code_of(lambda: frames_at(video, [-0.1])) is MediaErrorCode.TS_OOB
    assert code_of(lambda: frames_at(video, [1.0, 9.0])) is MediaErrorCode.TS_OOB
    assert code_of(lambda: frames(video, -1.0)) is MediaErrorCode.TS_OOB
    assert code_of(lambda: frames(video, 0.0, 30.0)) is MediaErrorCode.TS_OOB
    with pytest.raises(MediaError, match=r"timestamps\[1\] 9\.0 s is past the end"):
        frames_at(video, [1.0, 9.0])


def test_invalid_ranges(video: Path) -> None:
    assert code_of(lambda: frames(video, 3.0, 1.0)) is MediaErrorCode.INVALID_RANGE
    assert code_of(lambda: frames(video, num=0)) is MediaErrorCode.INVALID_RANGE
    assert code_of(lambda: frames_at(video, [])) is MediaErrorCode.INVALID_RANGE
    assert code_of(lambda: frames_at(video, [math.nan])) is MediaErrorCode.INVALID_RANGE
    assert code_of(lambda: frames(video, max_edge=0)) is MediaErrorCode.INVALID_RANGE


def test_too_many_frames(video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_MEDIA__MAX_FRAMES", "4")
    get_settings.cache_clear()
    assert code_of(lambda: frames(video, num=5)) is MediaErrorCode.TOO_MANY_FRAMES
    assert code_of(lambda: frames_at(video, [0.1] * 5)) is MediaErrorCode.TOO_MANY_FRAMES
    assert len(frames(video, num=4)) == 4


def test_missing_and_unsupported(tmp_path: Path) -> None:
    assert code_of(lambda: frames(tmp_path / "nope.mp4")) is MediaErrorCode.NOT_FOUND
    text = tmp_path / "notes.mp4"
    text.write_text("this is not a video\n" * 20)
    assert code_of(lambda: frames(text)) is MediaErrorCode.UNSUPPORTED


def test_truncated_faststart(media_dir: Path, tmp_path: Path, tmp_dir_guard: Path) -> None:
    whole = write_faststart(media_dir / "faststart.mp4")
    assert b"moov" in whole.read_bytes()[:200]  # the index precedes the data
    half = cut_in_half(whole, tmp_path / "half.mp4")
    # What exists still decodes exactly; what was cut off is a clear CORRUPT error.
    early = frames_at(half, [0.2, 0.9, 0.5])
    assert [synth.read_index(f.image) for f in early] == [5, 22, 12]
    calls: list[Callable[[], object]] = [
        lambda: frames_at(half, [0.2, 3.5]),
        lambda: frames_at(half, [3.5]),
        lambda: frames(half, num=8),
        lambda: frames_at(half, [3.5], keyframes_only=True),
    ]
    for call in calls:
        with pytest.raises(MediaError, match=r"decoding stopped at \d") as err:
            call()
        assert err.value.code is MediaErrorCode.CORRUPT


def test_truncated_before_last_decodable_frame(media_dir: Path, tmp_path: Path) -> None:
    half = cut_in_half(write_faststart(media_dir / "faststart2.mp4"), tmp_path / "half.mp4")
    dense = [i / FPS for i in range(LAST_INDEX + 1)]
    with pytest.raises(MediaError) as err:
        frames_at(half, dense)
    assert err.value.code is MediaErrorCode.CORRUPT
    # Every frame up to the cut is served exactly, so the cut is where decoding stopped.
    stop = float(err.value.message.split("decoding stopped at ")[1].split(" s")[0])
    got = frames_at(half, [t for t in dense if t <= stop])
    assert [synth.read_index(f.image) for f in got] == list(range(len(got)))


def test_truncated_index_at_end(video: Path, tmp_path: Path) -> None:
    # The plain MP4 keeps its index at the end, so half of it has none: nothing can be read.
    half = cut_in_half(video, tmp_path / "half.mp4")
    assert code_of(lambda: frames(half)) is MediaErrorCode.CORRUPT
