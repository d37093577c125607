"""A dense request (times closer than the GOP) is cut at keyframes and decoded on every core.

Every test compares the parallel result with the one-worker walk, byte for byte, on footage
with B-frames; the pictures decoded by all workers together may exceed the walk's only by the
few pictures each cut costs.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import threading
from pathlib import Path
from typing import ClassVar

import av
import numpy as np
import pytest

from omnilab.media import frames, frames_at, probe, synth
from omnilab.media.prepared import jpeg_frames

video_module = importlib.import_module("omnilab.media.video")
plan_module = importlib.import_module("omnilab.media._plan")
picker_module = importlib.import_module("omnilab.media._picker")

FPS = 25
GOP = 2.0
# Every 0.13 s over 12 s: closer than the 2 s GOP, so the whole request is one run.
DENSE = [round(0.03 + 0.13 * i, 3) for i in range(92)]


@pytest.fixture(scope="module")
def bframes_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 s with B-frames (x264 veryfast: 3 B-frames, pyramid), a keyframe every 2 s."""
    path = tmp_path_factory.mktemp("dense") / "b.mp4"
    synth.make_video(path, duration=12.0, fps=FPS, gop_seconds=GOP, audio=False)
    with av.open(str(path)) as c:
        reordered = sum(
            1 for p in c.demux(c.streams.video[0]) if p.pts is not None and p.pts != p.dts
        )
    assert reordered > 50, "the test needs a video with B-frames"
    return path


class _Counting(picker_module.Picker):  # type: ignore[misc]
    """The walk, recording what each worker decoded."""

    walks: ClassVar[list[tuple[str, int, set[int]]]] = []

    def pick(self, times: list[float]):  # type: ignore[no-untyped-def]
        shown: set[int] = set()
        for t, (pts, frame) in super().pick(times):
            shown.add(pts)
            yield t, (pts, frame)
        _Counting.walks.append((threading.current_thread().name, self.decoded_count, shown))


@pytest.fixture()
def counting(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, set[int]]]:
    _Counting.walks = []
    monkeypatch.setattr(video_module, "_Picker", _Counting)
    return _Counting.walks


def _digest(got: list[video_module.Frame]) -> list[tuple[float, float, bool, str]]:
    return [
        (f.timestamp, f.requested, f.keyframe, hashlib.sha256(f.image.tobytes()).hexdigest())
        for f in got
    ]


def _with_workers(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.setattr(plan_module, "_workers", lambda: n)


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_dense_pieces_give_the_walks_frames(
    bframes_video: Path,
    monkeypatch: pytest.MonkeyPatch,
    counting: list[tuple[str, int, set[int]]],
    workers: int,
) -> None:
    _with_workers(monkeypatch, 1)
    walk = frames_at(bframes_video, DENSE, max_edge=160)
    assert len(counting) == 1
    walked = counting[0][1]
    counting.clear()

    _with_workers(monkeypatch, workers)
    got = frames_at(bframes_video, DENSE, max_edge=160)
    # One piece per worker, each decoded in a worker thread.
    assert len(counting) == workers
    assert all(name.startswith("omnilab-frames") for name, _, _ in counting)
    assert _digest(got) == _digest(walk)
    for f in got:  # and they are the exact frames
        assert synth.read_index(f.image) == min(299, int(f.requested * FPS + 1e-6))
    # Nothing decoded twice but the picture or two after each cut (the one after the last
    # time of a piece, which tells it is the last one shown): far from a GOP (50) a cut.
    decoded = sum(n for _, n, _ in counting)
    assert decoded <= walked + 2 * (workers - 1)


def test_dense_keyframes_only_matches_the_walk(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch, counting: list[tuple[str, int, set[int]]]
) -> None:
    times = [round(0.1 + 0.05 * i, 3) for i in range(230)]
    _with_workers(monkeypatch, 1)
    walk = frames_at(bframes_video, times, keyframes_only=True)
    counting.clear()
    _with_workers(monkeypatch, 2)
    got = frames_at(bframes_video, times, keyframes_only=True)
    assert len(counting) == 2
    assert _digest(got) == _digest(walk)
    assert {f.timestamp for f in got} == {0.0, 2.0, 4.0, 6.0, 8.0, 10.0}
    # Cut between keyframes: no keyframe is returned (decoded) by both workers.
    a, b = (shown for _, _, shown in counting)
    assert len(a) + len(b) == 6 and not a & b


def test_pieces_start_at_keyframes_and_balance(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = probe(bframes_video)
    assert plan_module.keyframe_times(info, 0.0, 12.0) == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert plan_module.keyframe_times(info, 5.1, 7.0) == [4.0, 6.0, 8.0]
    assert plan_module.keyframes_around(info, [0.0, 5.1, 11.0]) == [[0.0, 2.0], [4.0, 6.0], [10.0]]
    for workers in (2, 3, 4):
        _with_workers(monkeypatch, workers)
        batches = plan_module.plan(info, DENSE, False)
        assert len(batches) == workers
        pieces = sorted(g for b in batches for g in b)
        assert [t for g in pieces for t in g] == DENSE  # every time once, in order
        for before, piece in itertools.pairwise(pieces):
            # A keyframe lies after the last time of one piece, at or before the next's first.
            key = GOP * (piece[0] // GOP)
            assert before[-1] < key <= piece[0]
        spans = [sum(g[-1] - g[0] for g in b) for b in batches]
        # Balanced to within a GOP: cuts can only fall on keyframes.
        assert max(spans) - min(spans) <= GOP + 1e-9


def test_small_dense_requests_stay_in_one_worker(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = probe(bframes_video)
    _with_workers(monkeypatch, 4)
    looked: list[list[float]] = []
    real = plan_module.keyframes_around

    def spy(i: object, times: list[float]) -> list[list[float]]:
        looked.append(times)
        return real(i, times)  # type: ignore[arg-type]

    monkeypatch.setattr(plan_module, "keyframes_around", spy)
    # Ten frames within 3 s: about 100 pictures to decode, below what a second worker pays for.
    few = [round(1.0 + 0.3 * i, 2) for i in range(10)]
    assert len(plan_module.plan(info, few, False)) == 1
    # Two workers' runs that are already balanced are not cut either.
    runs = [*[round(0.1 + 0.1 * i, 2) for i in range(15)], *[8.0 + 0.1 * i for i in range(15)]]
    batches = plan_module.plan(info, runs, False)
    assert sorted(len(g) for b in batches for g in b) == [15, 15]
    assert looked == []  # no keyframe pass without a cut
    plan_module.plan(info, DENSE, False)
    assert len(looked) == 1 and len(looked[0]) == 3  # one pass: around each of the 3 cuts


def test_a_damaged_tail_stops_the_keyframe_list(tmp_path: Path) -> None:
    whole = synth.make_video(tmp_path / "v.mkv", duration=8.0, gop_seconds=GOP, audio=False)
    info = probe(whole)
    assert plan_module.keyframe_times(info, 0.0, 8.0) == [0.0, 2.0, 4.0, 6.0]
    cut = tmp_path / "cut.mkv"
    data = whole.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    keys = plan_module.keyframe_times(info.model_copy(update={"path": cut}), 0.0, 8.0)
    assert keys[:1] == [0.0] and len(keys) < 4


def test_dense_jpeg_frames_are_the_walks_bytes(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from omnilab.media.cache import MediaCache

    _with_workers(monkeypatch, 1)
    walk = jpeg_frames(
        bframes_video,
        0.0,
        11.9,
        num=90,
        max_edge=128,
        cache=MediaCache(tmp_path / "a", max_bytes=1 << 30),
    )
    _with_workers(monkeypatch, 2)
    prepared = importlib.import_module("omnilab.media.prepared")
    encoders: set[str] = set()
    real = prepared._store_frame

    def spy(*args: object) -> object:
        encoders.add(threading.current_thread().name)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(prepared, "_store_frame", spy)
    got = jpeg_frames(
        bframes_video,
        0.0,
        11.9,
        num=90,
        max_edge=128,
        cache=MediaCache(tmp_path / "b", max_bytes=1 << 30),
    )
    assert [f.path.read_bytes() for f in got] == [f.path.read_bytes() for f in walk]
    assert [(f.timestamp, f.requested) for f in got] == [(f.timestamp, f.requested) for f in walk]
    # Encoded in a pool of threads, not one after another in the caller's.
    assert encoders and all(name.startswith("omnilab-jpeg") for name in encoders)


def test_frames_linspace_uses_the_pieces(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch, counting: list[tuple[str, int, set[int]]]
) -> None:
    _with_workers(monkeypatch, 2)
    got = frames(bframes_video, 0.0, 11.96, num=120, max_edge=96)
    assert len(counting) == 2
    _with_workers(monkeypatch, 1)
    assert _digest(got) == _digest(frames(bframes_video, 0.0, 11.96, num=120, max_edge=96))
    assert np.asarray(got[0].image).shape == (72, 96, 3)


def test_spare_cores_give_each_piece_frame_threads(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, int]] = []
    real = picker_module.Picker.__init__

    def spy(self: picker_module.Picker, *args: object, **kw: object) -> None:
        real(self, *args, **kw)  # type: ignore[arg-type]
        seen.append((str(self.vs.thread_type), self.vs.codec_context.thread_count))

    monkeypatch.setattr(picker_module.Picker, "__init__", spy)
    _with_workers(monkeypatch, 1)
    walk = frames_at(bframes_video, DENSE, max_edge=160)
    # Two workers on eight cores: each piece's decoder gets frame threads on four of them.
    _with_workers(monkeypatch, 2)
    monkeypatch.setattr(plan_module, "cores", lambda: 8)
    seen.clear()
    got = frames_at(bframes_video, DENSE, max_edge=160)
    assert [(t.endswith("AUTO"), n) for t, n in seen] == [(True, 4), (True, 4)]
    assert _digest(got) == _digest(walk)
    # As many cores as workers: single-threaded decoders, as every core has a worker.
    monkeypatch.setattr(plan_module, "cores", lambda: 2)
    seen.clear()
    assert _digest(frames_at(bframes_video, DENSE, max_edge=160)) == _digest(walk)
    assert [t.endswith("NONE") for t, _ in seen] == [True, True]


@pytest.fixture(scope="module")
def hevc_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 s of HEVC (x265: open GOPs, whose leading pictures follow the keyframe), 2 s GOP."""
    path = tmp_path_factory.mktemp("dense") / "h.mp4"
    return synth.make_video(
        path, duration=8.0, gop_seconds=GOP, audio=False, codec="libx265", preset="ultrafast"
    )


def test_dense_hevc_pieces_give_the_walks_frames(
    hevc_video: Path, monkeypatch: pytest.MonkeyPatch, counting: list[tuple[str, int, set[int]]]
) -> None:
    times = [round(0.01 + 0.07 * i, 3) for i in range(113)]
    _with_workers(monkeypatch, 1)
    walk = frames_at(hevc_video, times, max_edge=96)
    counting.clear()
    _with_workers(monkeypatch, 3)
    got = frames_at(hevc_video, times, max_edge=96)
    assert len(counting) == 3
    assert _digest(got) == _digest(walk)
    assert all(synth.read_index(f.image) == int(f.requested * FPS + 1e-6) for f in got)


def test_cuts_off_the_keyframes_still_give_the_exact_frames(
    bframes_video: Path, monkeypatch: pytest.MonkeyPatch, counting: list[tuple[str, int, set[int]]]
) -> None:
    """Keyframes misreported (mid-GOP): the pieces' workers seek back and decode more, but
    every frame is still the walk's."""
    _with_workers(monkeypatch, 1)
    walk = frames_at(bframes_video, DENSE, max_edge=64)
    _with_workers(monkeypatch, 3)
    monkeypatch.setattr(
        plan_module, "keyframes_around", lambda _i, times: [[t + 0.37] for t in times]
    )
    counting.clear()
    got = frames_at(bframes_video, DENSE, max_edge=64)
    assert len(counting) == 3
    assert _digest(got) == _digest(walk)
