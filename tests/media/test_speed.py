"""The faster paths of issue 13 give the same results as the plain ones.

Frames of GOPs far apart are decoded by several workers, each with its own container; audio
frames are joined into batches of about a second before resampling. Both must leave every
output unchanged: the same exact frames and the same samples.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import av
import numpy as np
import pytest

from omnilab.media import frames, frames_at, probe, synth
from omnilab.media.errors import MediaError, MediaErrorCode

video_module = importlib.import_module("omnilab.media.video")
audio_module = importlib.import_module("omnilab.media.audio")
plan_module = importlib.import_module("omnilab.media._plan")

# Three runs more than a GOP (1 s) apart, unsorted and with repeats of one shown frame.
TIMES = [2.2, 0.02, 0.3, 0.31, 0.5, 1.9, 2.0, 3.5, 3.98, 4.0, 0.31]


@pytest.fixture()
def parallel(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Force the parallel path on small videos; records the thread of every decoding batch."""
    monkeypatch.setattr(plan_module, "_PARALLEL_MIN_FRAMES", 0)
    monkeypatch.setattr(plan_module, "_workers", lambda: 3)
    threads: list[str] = []
    real = video_module._pick_batch

    def recording(*args: object) -> object:
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(video_module, "_pick_batch", recording)
    return threads


def _sequential(path: Path, times: list[float], **kw: object) -> list[video_module.Frame]:
    # One worker is the plain path: one container, one forward walk.
    old = plan_module._workers
    plan_module._workers = lambda: 1
    try:
        return frames_at(path, times, **kw)  # type: ignore[arg-type]
    finally:
        plan_module._workers = old


def _same(a: list[video_module.Frame], b: list[video_module.Frame]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert (x.timestamp, x.requested, x.keyframe) == (y.timestamp, y.requested, y.keyframe)
        assert np.array_equal(np.asarray(x.image), np.asarray(y.image))


def test_parallel_frames_are_the_exact_frames(video: Path, parallel: list[str]) -> None:
    got = frames_at(video, TIMES)
    assert len(parallel) >= 2 and all(n.startswith("omnilab-frames") for n in parallel)
    for f in got:
        # The index synth drew into the picture is the frame shown at the requested time.
        assert synth.read_index(f.image) == min(99, int(f.requested * 25 + 1e-6))
        assert f.timestamp == pytest.approx(synth.read_index(f.image) / 25, abs=1e-6)
    _same(got, _sequential(video, TIMES))


def test_parallel_keyframes_only_matches(video: Path, parallel: list[str]) -> None:
    got = frames_at(video, TIMES, keyframes_only=True)
    assert len(parallel) >= 2
    assert all(f.keyframe and f.timestamp == int(f.requested) for f in got if f.requested < 4)
    _same(got, _sequential(video, TIMES, keyframes_only=True))


def test_parallel_frames_keep_order_and_size(video: Path, parallel: list[str]) -> None:
    got = frames(video, 0.0, 4.0, num=3, max_edge=64)
    assert [f.requested for f in got] == [0.0, 2.0, 4.0]
    assert [synth.read_index(f.image) for f in got] == [0, 50, 99]
    assert all(max(f.image.size) == 64 for f in got)
    assert len(parallel) >= 2


def test_a_worker_failure_is_a_media_error(
    video: Path, parallel: list[str], tmp_path: Path
) -> None:
    data = video.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(MediaError) as err:
        frames_at(cut, [0.1, 3.9], keyframes_only=False)
    assert err.value.code in (MediaErrorCode.CORRUPT, MediaErrorCode.TS_OOB)


def test_plan_keeps_runs_whole_and_balances(video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = probe(video).model_copy(update={"keyframe_interval": 1.0, "fps": 25.0})
    monkeypatch.setattr(plan_module, "_workers", lambda: 2)
    monkeypatch.setattr(plan_module, "_PARALLEL_MIN_FRAMES", 0)
    times = [0.0, 0.5, 1.4, 10.0, 20.0, 20.2, 30.0]
    batches = plan_module.plan(info, times, False)
    assert len(batches) == 2
    groups = sorted(g for b in batches for g in b)
    # Times within a GOP of the previous one stay with it: no GOP is decoded by two workers.
    assert groups == [[0.0, 0.5, 1.4], [10.0], [20.0, 20.2], [30.0]]
    cost = [sum(0.5 + g[-1] - g[0] for g in b) for b in batches]
    assert max(cost) <= 2.4  # 1.9 + 0.5 | 0.7 + 0.5 + 0.5: the largest run alone
    for b in batches:
        assert b == sorted(b)


def test_small_requests_stay_in_one_worker(video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = probe(video)  # 25 fps, 1 s GOP: these few frames are far below the threshold
    monkeypatch.setattr(plan_module, "_workers", lambda: 4)
    assert len(plan_module.plan(info, [0.1, 2.5, 3.9], False)) == 1
    monkeypatch.setattr(plan_module, "_workers", lambda: 1)
    monkeypatch.setattr(plan_module, "_PARALLEL_MIN_FRAMES", 0)
    assert len(plan_module.plan(info, [0.1, 2.5, 3.9], False)) == 1


def test_decoder_threads(video: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = video_module._Picker.__init__

    def spy(self: object, *args: object, **kw: object) -> None:
        real(self, *args, **kw)  # type: ignore[arg-type]
        seen.append(str(self.vs.thread_type))  # type: ignore[attr-defined]

    monkeypatch.setattr(video_module._Picker, "__init__", spy)
    frames_at(video, [1.0, 1.5])  # one run: frame threads overlap its frames
    frames_at(video, [0.1, 3.5])  # two seeks: threads would be flushed at each
    assert seen[0].endswith("AUTO") and seen[1].endswith("NONE")


# --- audio ------------------------------------------------------------------------------------


def _unbatched(monkeypatch: pytest.MonkeyPatch) -> None:
    # A batch that takes no second frame: every decoded frame is resampled alone, as before.
    monkeypatch.setattr(audio_module._Batch, "fits", lambda self, frame: self.first is None)


@pytest.mark.parametrize("ext", [".m4a", ".mp3", ".ogg", ".webm", ".wav"])
def test_batched_audio_is_sample_identical(
    media_dir: Path, monkeypatch: pytest.MonkeyPatch, ext: str
) -> None:
    path = media_dir / f"speed-tones{ext}"
    if not path.exists():
        synth.make_audio(path, duration=5.0)
    info = probe(path)
    got = list(audio_module.iter_audio(info, 0.7, 4.3, rate=16000, layout="mono"))
    # Resampled in batches of about a second, not frame by frame (hundreds of blocks).
    assert len(got) <= 8
    joined = np.concatenate(got, axis=1)
    assert joined.shape == (1, round(3.6 * 16000))
    _unbatched(monkeypatch)
    plain = np.concatenate(
        list(audio_module.iter_audio(info, 0.7, 4.3, rate=16000, layout="mono")), axis=1
    )
    assert np.array_equal(joined, plain)


def test_batches_break_at_gaps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gap in the timestamps stays silence: frames on both sides are not joined."""
    from fractions import Fraction

    path = tmp_path / "gap.mkv"
    rate = 16000
    tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(rate) / rate)).astype(np.float32)
    with av.open(str(path), "w") as c:
        s = c.add_stream("pcm_f32le", rate=rate, layout="mono")
        for begin in (0.0, 2.0):  # 1 s of sound, 1 s without data, 1 s of sound
            for k in range(0, rate, 1000):
                f = av.AudioFrame.from_ndarray(
                    tone[None, k : k + 1000], format="flt", layout="mono"
                )
                f.sample_rate, f.time_base = rate, Fraction(1, rate)
                f.pts = round(begin * rate) + k
                c.mux(s.encode(f))
        c.mux(s.encode(None))
    info = probe(path)
    x = np.concatenate(list(audio_module.iter_audio(info, 0.0, 3.0, rate=rate, layout="mono")), 1)
    assert x.shape == (1, 3 * rate)
    assert np.abs(x[0, : rate - 10]).max() > 0.4
    assert not x[0, rate + 10 : 2 * rate - 10].any()
    assert np.abs(x[0, 2 * rate + 10 :]).max() > 0.4
    _unbatched(monkeypatch)
    y = np.concatenate(list(audio_module.iter_audio(info, 0.0, 3.0, rate=rate, layout="mono")), 1)
    assert np.array_equal(x, y)
