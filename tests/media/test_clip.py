"""clip: frame-exact cuts whose pictures and sound are the source's at the same times."""

from __future__ import annotations

import importlib
import math
import wave
from pathlib import Path

import av
import numpy as np
import pytest
from numpy.typing import NDArray
from PIL import Image

from omnilab.config import get_settings
from omnilab.media import probe, synth
from omnilab.media.audio import audio_samples
from omnilab.media.cache import MediaCache
from omnilab.media.clips import clip
from omnilab.media.errors import MediaError, MediaErrorCode

FPS = 25
RATE = 16_000


def decoded_frames(path: Path, *, turn: int = 0) -> list[tuple[float, int]]:
    """(time, drawn index) of every frame; ``turn`` quarter turns clockwise before reading."""
    with av.open(str(path)) as c:
        out = []
        for frame in c.decode(c.streams.video[0]):
            assert frame.pts is not None and frame.time_base is not None
            rgb = np.rot90(frame.to_ndarray(format="rgb24"), k=-turn)
            out.append((float(frame.pts * frame.time_base), synth.read_index(Image.fromarray(rgb))))
    return out


def assert_frames_in_sync(path: Path, start: float, end: float, *, fps: float = FPS) -> None:
    """Frame at clip time t shows source frame round((start + t) * fps), and none is missing."""
    seen = decoded_frames(path)
    assert seen[0] == (0.0, round(start * fps))
    for t, index in seen:
        assert index == round((start + t) * fps), f"clip time {t:.3f} s shows frame {index}"
    assert [i for _, i in seen] == list(range(round(start * fps), round(end * fps)))


@pytest.fixture(scope="module")
def reference(media_dir: Path) -> NDArray[np.float32]:
    """The exact tones at 16 kHz, as synth writes them, to compare the clips' sound against."""
    path = synth.make_audio(media_dir / "clip_reference16k.wav", duration=5.0, sample_rate=RATE)
    with wave.open(str(path), "rb") as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return (pcm / 32768.0).astype(np.float32)


def assert_tones_in_sync(
    path: Path, start: float, end: float, reference: NDArray[np.float32]
) -> None:
    """The sound at clip time t is the source's at start + t: tone by tone and to 2 ms."""
    for second in range(math.floor(start), math.ceil(end)):
        lo, hi = max(start, second) + 0.05, min(end, second + 1) - 0.05
        if hi - lo < 0.2:
            continue
        x = audio_samples(path, lo - start, hi - start)
        assert synth.dominant_frequency(x, RATE) == pytest.approx(synth.tone_freq(second), abs=4)
    for boundary in range(math.ceil(start + 0.1), math.floor(end - 0.1) + 1):
        # Around a tone change the waveform is aperiodic, so the best lag is unambiguous.
        at = boundary - start
        x = audio_samples(path, at - 0.1, at + 0.1)
        first = round((boundary - 0.1) * RATE)
        lags = range(-400, 401)
        scores = [float(np.dot(x, reference[first + lag : first + lag + x.size])) for lag in lags]
        assert abs(lags[int(np.argmax(scores))]) <= round(0.002 * RATE)


@pytest.mark.parametrize(
    ("start", "end"), [(1.0, 3.0), (1.48, 2.6), (0.0, 4.0), (1.43, 2.07), (1.41, 2.09)]
)
def test_clip_is_exact_and_in_sync(
    video: Path, tmp_path: Path, reference: NDArray[np.float32], start: float, end: float
) -> None:
    # 1.48 starts mid-GOP (keyframes every second); 1.43 and 1.41 fall between frames 35 and 36,
    # nearer to 36 and to 35.
    out = clip(video, start, end, out=tmp_path / "clip.mp4")
    info = probe(out)
    assert (info.container, info.video_codec, info.audio_codec) == ("mp4", "h264", "aac")
    assert (info.width, info.height, info.fps, info.start_time) == (320, 240, FPS, 0.0)
    assert info.duration == pytest.approx(end - start, abs=1 / FPS + 1024 / 44_100)
    with av.open(str(out)) as c:
        assert c.streams.video[0].codec_context.pix_fmt == "yuv420p"
        assert c.streams.audio[0].codec_context.sample_rate == 44_100
    assert_frames_in_sync(out, start, end)
    assert_tones_in_sync(out, start, end, reference)


@pytest.mark.parametrize("ext", [".mkv", ".webm"])
def test_clip_from_matroska_and_webm(
    media_dir: Path, tmp_path: Path, reference: NDArray[np.float32], ext: str
) -> None:
    source = synth.make_video(media_dir / f"clip_source{ext}", duration=3.0)
    out = clip(source, 0.6, 2.4, out=tmp_path / "clip.mp4")
    assert probe(out).duration == pytest.approx(1.8, abs=1 / FPS + 1024 / 44_100)
    assert_frames_in_sync(out, 0.6, 2.4)
    assert_tones_in_sync(out, 0.6, 2.4, reference)


def test_stereo_48k_sound_stays_stereo_48k(
    media_dir: Path, tmp_path: Path, reference: NDArray[np.float32]
) -> None:
    source = synth.make_video(
        media_dir / "stereo.mp4", duration=3.0, sample_rate=48_000, channels=2
    )
    out = clip(source, 0.65, 2.35, out=tmp_path / "clip.mp4")
    info = probe(out)
    assert (info.sample_rate, info.channels) == (48_000, 2)
    assert_frames_in_sync(out, 0.65, 2.35)
    assert_tones_in_sync(out, 0.65, 2.35, reference)


def test_video_without_sound_gives_a_silent_clip(silent_video: Path, tmp_path: Path) -> None:
    out = clip(silent_video, 0.4, 1.6, out=tmp_path / "clip.mp4")
    info = probe(out)
    assert info.has_video and not info.has_audio
    assert info.duration == pytest.approx(1.2, abs=1 / FPS)
    assert_frames_in_sync(out, 0.4, 1.6)


def test_shorter_than_a_frame_still_has_one(video: Path, tmp_path: Path) -> None:
    out = clip(video, 1.43, 1.44, out=tmp_path / "clip.mp4")
    assert decoded_frames(out) == [(0.0, 36)]


def test_rotation_is_applied_to_the_pixels(media_dir: Path, tmp_path: Path) -> None:
    source = synth.make_video(media_dir / "portrait.mp4", duration=2.0, rotation=90)
    assert (probe(source).width, probe(source).height) == (240, 320)
    out = clip(source, 0.4, 1.2, out=tmp_path / "clip.mp4")
    info = probe(out)
    assert (info.rotation, info.width, info.height) == (0, 240, 320)
    # The display matrix turns the stored picture 90 degrees counterclockwise (as FFmpeg's
    # autorotate does): turning the clip back clockwise shows the stored pattern.
    seen = decoded_frames(out, turn=1)
    assert [i for _, i in seen] == list(range(10, 30))


def test_max_edge_shrinks_to_even_dimensions(video: Path, tmp_path: Path) -> None:
    out = clip(video, 2.0, 2.8, out=tmp_path / "clip.mp4", max_edge=100)
    info = probe(out)
    assert (info.width, info.height) == (100, 76)  # 100 x 75 rounded up to even
    assert [i for _, i in decoded_frames(out)] == list(range(50, 70))
    assert clip(video, 2.0, 2.8, out=tmp_path / "big.mp4", max_edge=10_000).stat().st_size > 0
    assert probe(tmp_path / "big.mp4").width == 320  # never enlarged
    with pytest.raises(ValueError, match="max_edge"):
        clip(video, 2.0, 2.8, out=tmp_path / "x.mp4", max_edge=0)


def test_clip_is_cached(video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = clip(video, 0.6, 1.6)
    assert first.is_relative_to(get_settings().cache_dir / "media")
    assert_frames_in_sync(first, 0.6, 1.6)

    def no_encoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached clip was encoded again")

    monkeypatch.setattr(importlib.import_module("omnilab.media.clips"), "_encode", no_encoding)
    inode = first.stat().st_ino
    assert clip(video, 0.6, 1.6) == first and first.stat().st_ino == inode
    with pytest.raises(AssertionError, match="encoded again"):
        clip(video, 0.6, 1.6, max_edge=64)  # another size is another entry
    cache = MediaCache(tmp_path / "mine", max_bytes=1 << 30)
    with pytest.raises(AssertionError, match="encoded again"):
        clip(video, 0.6, 1.6, cache=cache)


def test_out_is_written_atomically(video: Path, tmp_path: Path, tmp_dir_guard: Path) -> None:
    out = tmp_path / "clips" / "a.mp4"
    assert clip(video, 3.0, 4.0, out=out) == out
    assert sorted(p.name for p in out.parent.iterdir()) == ["a.mp4"]
    assert_frames_in_sync(out, 3.0, 4.0)


def _truncated(src: Path, dst: Path) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 2])
    return dst


@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("audio", MediaErrorCode.NO_VIDEO_STREAM, ["tones.wav", "audio_segment"]),
        ("image", MediaErrorCode.NO_VIDEO_STREAM, ["image.png", "image"]),
        ("reversed", MediaErrorCode.INVALID_RANGE, ["2.0 s", "1.0 s"]),
        ("empty_range", MediaErrorCode.INVALID_RANGE, ["video.mp4", "empty"]),
        ("negative", MediaErrorCode.TS_OOB, ["video.mp4", "-1.0 s", "4.0 s"]),
        ("past_end", MediaErrorCode.TS_OOB, ["video.mp4", "5.0 s", "duration 4.0 s"]),
        ("too_long", MediaErrorCode.TOO_LONG, ["3.0 s", "limit is 1.5 s", "MAX_CLIP_SECONDS"]),
        ("missing", MediaErrorCode.NOT_FOUND, ["nothing.mp4"]),
        ("empty", MediaErrorCode.CORRUPT, ["empty.mp4", "empty"]),
        ("no_moov", MediaErrorCode.CORRUPT, ["cut.mp4"]),
        ("truncated", MediaErrorCode.CORRUPT, ["cut.mkv", "truncated"]),
    ],
)
def test_errors_leave_nothing_behind(
    case: str,
    code: MediaErrorCode,
    words: list[str],
    video: Path,
    audio_file: Path,
    image_file: Path,
    media_dir: Path,
    tmp_path: Path,
    tmp_dir_guard: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, start, end = video, 1.0, 2.0
    if case == "audio":
        path = audio_file
    elif case == "image":
        path = image_file
    elif case == "reversed":
        start, end = 2.0, 1.0
    elif case == "empty_range":
        start = end = 1.0
    elif case == "negative":
        start = -1.0
    elif case == "past_end":
        end = 5.0
    elif case == "too_long":
        monkeypatch.setenv("OMNILAB_MEDIA__MAX_CLIP_SECONDS", "1.5")
        get_settings.cache_clear()
        start, end = 0.5, 3.5
    elif case == "missing":
        path = tmp_path / "nothing.mp4"
    elif case == "empty":
        path = tmp_path / "empty.mp4"
        path.touch()
    elif case == "no_moov":
        # An MP4 written without faststart keeps its index at the end: cut, it cannot be opened.
        path = _truncated(video, tmp_path / "cut.mp4")
    elif case == "truncated":
        # Matroska opens with half its data; the video stops well before the requested end.
        silent = synth.make_video(media_dir / "silent3.mkv", duration=3.0, audio=False)
        path, start, end = _truncated(silent, tmp_path / "cut.mkv"), 0.5, 2.5
    out = tmp_path / "out" / "clip.mp4"
    for call in (
        lambda: clip(path, start, end, out=out),
        lambda: clip(path, start, end),
    ):
        with pytest.raises(MediaError) as err:
            call()
        assert err.value.code is code
        for word in words:
            assert word in err.value.message
    assert not out.exists()
    assert not (out.parent.exists() and any(out.parent.iterdir()))
    cache_dir = get_settings().cache_dir / "media"
    # Lock files (the eviction lock and per-entry producer locks) stay by design: see cache.py.
    assert not [p for p in cache_dir.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
