"""Prepared media parts (issue 37): sampled frames and fitted images made once, reused from the
media cache across calls, copies of a file, tasks at the same time and processes."""

from __future__ import annotations

import io
import shutil
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

from omnilab.media import frames, frames_at, synth
from omnilab.media import video as video_module
from omnilab.media.budget import MemoryBudget
from omnilab.media.cache import MediaCache
from omnilab.media.image import crop, resize
from omnilab.media.prepared import fitted_png, jpeg_frames, jpeg_frames_at


def _jpeg(image: PILImage.Image) -> bytes:
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="JPEG", quality=90)
    return buf.getvalue()


@pytest.fixture()
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts calls that decode frames (``_extract``), whatever the entry point."""
    calls: list[int] = []
    real = video_module._extract

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(video_module, "_extract", counting)
    return calls


def test_jpeg_frames_are_the_frames_encoded_as_before(video: Path, decodes: list[int]) -> None:
    made = jpeg_frames(video, 0.0, None, num=6, max_edge=100)
    direct = frames(video, 0.0, None, num=6, max_edge=100)
    assert [f.path.read_bytes() for f in made] == [_jpeg(f.image) for f in direct]
    assert [(f.timestamp, f.requested, f.keyframe) for f in made] == [
        (f.timestamp, f.requested, f.keyframe) for f in direct
    ]
    times = [3.5, 0.2, 1.1]
    at = jpeg_frames_at(video, times, max_edge=64)
    assert [f.path.read_bytes() for f in at] == [
        _jpeg(f.image) for f in frames_at(video, times, max_edge=64)
    ]
    assert [f.requested for f in at] == times


def test_a_second_request_decodes_nothing_even_for_a_copy(
    video: Path, tmp_path: Path, decodes: list[int]
) -> None:
    first = jpeg_frames(video, 0.0, None, num=5, max_edge=80)
    assert len(decodes) == 1
    copy = tmp_path / "renamed copy.mp4"
    shutil.copyfile(video, copy)
    again = jpeg_frames(copy, 0.0, None, num=5, max_edge=80)
    assert len(decodes) == 1  # same content, same sampling: the cache's files
    assert [f.path for f in again] == [f.path for f in first]
    jpeg_frames(video, 0.0, None, num=5, max_edge=81)  # another size is another part
    assert len(decodes) == 2


def test_an_evicted_frame_makes_the_set_again(video: Path, decodes: list[int]) -> None:
    first = jpeg_frames(video, 0.0, None, num=4, max_edge=64)
    first[2].path.unlink()
    again = jpeg_frames(video, 0.0, None, num=4, max_edge=64)
    assert len(decodes) == 2
    assert again[2].path.read_bytes() == _jpeg(frames(video, 0.0, None, 4, max_edge=64)[2].image)


def test_tasks_asking_at_once_decode_once(video: Path, decodes: list[int]) -> None:
    results: list[list[Path]] = []

    def ask() -> None:
        results.append([f.path for f in jpeg_frames(video, 0.0, None, num=8, max_edge=96)])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(decodes) == 1
    assert all(r == results[0] for r in results)


def test_the_cache_bound_holds_with_prepared_parts(video: Path, tmp_path: Path) -> None:
    cache = MediaCache(tmp_path / "small", max_bytes=1)
    jpeg_frames(video, 0.0, None, num=3, max_edge=64, cache=cache)
    # Entries just used are kept (a caller is about to read them) ...
    assert cache.size() > 1
    # ... and go once they have not been used for the grace period.
    import omnilab.media.cache as cache_module

    old = cache_module._GRACE_SECONDS
    cache_module._GRACE_SECONDS = -1.0
    try:
        cache.evict()
    finally:
        cache_module._GRACE_SECONDS = old
    assert cache.size() <= 1


def test_fitted_png_is_the_in_memory_crop_and_resize(image_file: Path) -> None:
    box = (10.0, 20.0, 110.0, 70.0)
    with PILImage.open(image_file) as im:
        picture = resize(crop(im.convert("RGB"), box), 40)
    buf = io.BytesIO()
    picture.save(buf, format="PNG")
    made = fitted_png(image_file, box, 40)
    assert made.read_bytes() == buf.getvalue()
    assert fitted_png(image_file, box, 40) == made  # the cached entry


def test_memory_budget_makes_jobs_wait() -> None:
    budget = MemoryBudget(100)
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def big() -> None:
        with budget.reserve(70):
            order.append("big in")
            inside.set()
            release.wait(5)
            order.append("big out")

    def second() -> None:
        inside.wait(5)
        with budget.reserve(70):
            order.append("second in")

    threads = [threading.Thread(target=big), threading.Thread(target=second)]
    for t in threads:
        t.start()
    inside.wait(5)
    threading.Event().wait(0.1)
    assert order == ["big in"]  # 70 + 70 > 100: the second job waits
    release.set()
    for t in threads:
        t.join()
    assert order == ["big in", "big out", "second in"]
    assert budget.peak == 70 and budget.used == 0
    with budget.reserve(10**9):  # larger than the budget: runs alone, not forever blocked
        assert budget.used == 100


def test_frame_preparation_waits_for_the_memory_budget(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs on different videos reserve their estimated peak: with room for one, they run one
    after the other instead of together."""
    import omnilab.media.budget as budget_module

    budget = MemoryBudget(10 * 1024**2)  # one job on the fixture video is estimated at ~7 MB
    asked: list[int] = []
    real_reserve = budget.reserve

    def reserve(nbytes: int) -> object:
        asked.append(nbytes)
        return real_reserve(nbytes)

    monkeypatch.setattr(budget, "reserve", reserve)
    monkeypatch.setattr(budget_module, "_BUDGET", budget)
    copies = [tmp_path / f"v{i}.mp4" for i in range(3)]
    for i, copy in enumerate(copies):
        copy.write_bytes(video.read_bytes() + bytes([i]))  # distinct content identities
    threads = [
        threading.Thread(target=jpeg_frames, args=(c, 0.0, None, 6), kwargs={"max_edge": 64})
        for c in copies
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(asked) == 3 and all(0 < n <= budget.limit < 2 * n for n in asked)
    assert budget.peak == max(asked)  # never two at once
    assert budget.used == 0
    assert all(len(jpeg_frames(c, 0.0, None, 6, max_edge=64)) == 6 for c in copies)


def test_soundtrack_is_written_block_by_block_with_the_same_samples(video: Path) -> None:
    import wave

    import numpy as np

    from omnilab.media import audio_samples, audio_segment

    wav = audio_segment(video, 0.25, 3.75)
    with wave.open(str(wav)) as w:
        written = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    whole = np.round(np.clip(audio_samples(video, 0.25, 3.75), -1, 1) * 32767.0).astype("<i2")
    assert np.array_equal(written, whole)


def test_synth_long_video_with_sparse_keyframes(tmp_path: Path) -> None:
    """Keyframe sampling's error bound: each frame is at most one GOP before its time."""
    clip = synth.make_video(tmp_path / "gop.mp4", duration=6.0, gop_seconds=2.0, audio=False)
    shots = jpeg_frames(clip, 0.0, None, num=7, max_edge=64, keyframes_only=True)
    for shot in shots:
        assert shot.keyframe
        assert 0.0 <= shot.requested - shot.timestamp <= 2.0 + 1e-6


@pytest.mark.parametrize(
    ("fmt", "layout", "dtype"),
    [
        ("fltp", "mono", "f4"),
        ("fltp", "stereo", "f4"),
        ("s16", "stereo", "i2"),
        ("s16p", "5.1", "i2"),
        ("u8", "mono", "u1"),
        ("dbl", "stereo", "f8"),
    ],
)
def test_joined_audio_frames_equal_their_arrays_concatenated(
    fmt: str, layout: str, dtype: str
) -> None:
    import av
    import numpy as np

    from omnilab.media.audio import _Batch

    channels = len(av.AudioLayout(layout).channels)
    frames = []
    pts = 48_000
    for samples in (1024, 7, 960):
        shape = (
            (channels, samples) if fmt.endswith("p") or channels == 1 else (1, samples * channels)
        )
        data = (np.arange(np.prod(shape)) % 100).astype(dtype).reshape(shape)
        frame = av.AudioFrame.from_ndarray(data, format=fmt, layout=layout)
        frame.sample_rate, frame.time_base, frame.pts = 48_000, Fraction(1, 48_000), pts
        pts += samples
        frames.append(frame)
    expected = np.concatenate([f.to_ndarray() for f in frames], axis=1)
    batch = _Batch()
    for frame in frames:
        assert batch.fits(frame)
        batch.add(frame)
    joined = batch.take()
    assert joined is not None and batch.take() is None
    assert (joined.pts, joined.time_base, joined.sample_rate) == (
        48_000,
        Fraction(1, 48_000),
        48_000,
    )
    assert (joined.format.name, joined.layout.name) == (fmt, layout)
    assert joined.to_ndarray().dtype == expected.dtype
    assert np.array_equal(joined.to_ndarray(), expected)


@pytest.mark.parametrize("slots", [1, 2])
def test_decoding_loops_wait_for_a_slot(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slots: int
) -> None:
    """Frame workers and soundtrack extractions of concurrent tasks run at most
    ``media.decode_slots`` at a time, and all of them finish."""
    import importlib
    import time

    import omnilab.media.budget as budget_module
    from omnilab.config import get_settings
    from omnilab.media import audio_segment

    video_module = importlib.import_module("omnilab.media.video")
    audio_module = importlib.import_module("omnilab.media.audio")
    monkeypatch.setenv("OMNILAB_MEDIA__DECODE_SLOTS", str(slots))
    get_settings.cache_clear()
    monkeypatch.setattr(budget_module, "_SLOTS", None)
    active, most = [0], [0]
    lock = threading.Lock()

    def counted(real: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            with lock:
                active[0] += 1
                most[0] = max(most[0], active[0])
            try:
                time.sleep(0.05)  # long enough for the other threads to arrive
                return real(*args, **kwargs)
            finally:
                with lock:
                    active[0] -= 1

        return run

    monkeypatch.setattr(video_module, "open_input", counted(video_module.open_input))
    monkeypatch.setattr(audio_module, "iter_audio", counted(audio_module.iter_audio))
    copies = [tmp_path / f"v{i}.mp4" for i in range(4)]
    for i, copy in enumerate(copies):
        copy.write_bytes(video.read_bytes() + bytes([i]))
    jobs = [
        threading.Thread(target=jpeg_frames, args=(c, 0.0, None, 6), kwargs={"max_edge": 64})
        for c in copies[:2]
    ] + [threading.Thread(target=audio_segment, args=(c, 0.0, 3.0)) for c in copies[2:]]
    for t in jobs:
        t.start()
    for t in jobs:
        t.join()
    assert most[0] == slots
    assert all(len(jpeg_frames(c, 0.0, None, 6, max_edge=64)) == 6 for c in copies[:2])


def test_decode_slots_default_to_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    import omnilab.media.budget as budget_module

    monkeypatch.setattr(budget_module, "_SLOTS", None)
    with budget_module.decode_slot():
        assert budget_module._SLOTS is not None
        # One is held: the rest of the cores' slots are free.
        free = 0
        while budget_module._SLOTS.acquire(blocking=False):
            free += 1
        for _ in range(free):
            budget_module._SLOTS.release()
    assert free == budget_module.cores() - 1


def test_soundtrack_extractions_run_one_at_a_time(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Soundtrack loops are GIL-bound: even with free decoding slots, only one runs at once."""
    import importlib
    import time

    import omnilab.media.budget as budget_module
    from omnilab.config import get_settings
    from omnilab.media import audio_samples, audio_segment

    audio_module = importlib.import_module("omnilab.media.audio")
    monkeypatch.setenv("OMNILAB_MEDIA__DECODE_SLOTS", "4")
    get_settings.cache_clear()
    monkeypatch.setattr(budget_module, "_SLOTS", None)
    active, most = [0], [0]
    lock = threading.Lock()

    def counting(real: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            with lock:
                active[0] += 1
                most[0] = max(most[0], active[0])
            try:
                time.sleep(0.05)
                yield from real(*args, **kwargs)
            finally:
                with lock:
                    active[0] -= 1

        return counted

    # Both loops: the bulk one (a soundtrack from its start) and the per-packet one.
    for name in ("iter_audio", "iter_bulk"):
        monkeypatch.setattr(audio_module, name, counting(getattr(audio_module, name)))
    copies = [tmp_path / f"a{i}.mp4" for i in range(3)]
    for i, copy in enumerate(copies):
        copy.write_bytes(video.read_bytes() + bytes([i]))
    jobs = [threading.Thread(target=audio_segment, args=(c, 0.0, 3.0)) for c in copies[:2]]
    jobs.append(threading.Thread(target=audio_samples, args=(copies[2], 0.0, 3.0)))
    for t in jobs:
        t.start()
    for t in jobs:
        t.join()
    assert most[0] == 1
    assert all(audio_segment(c, 0.0, 3.0).stat().st_size > 44 for c in copies[:2])
