"""audio_samples / audio_segment: the right sound, at the right sample, from every container."""

from __future__ import annotations

import wave
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.media import synth
from omnilab.media.audio import audio_samples, audio_segment
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode

RATE = 16_000
# Codec resampling and Matroska's millisecond timestamps shift audio by at most ~1 ms; 2 ms still
# catches every real mistake (AAC priming alone is 23 ms, Opus pre-skip 6.5 ms).
MAX_SHIFT = round(0.002 * RATE)

CONTAINERS = [".mp3", ".flac", ".m4a", ".ogg", ".mp4", ".mkv", ".webm"]


@pytest.fixture(scope="module")
def sources(media_dir: Path) -> dict[str, Path]:
    """3 s of tones in each container: audio-only files and the sound track of videos."""
    out: dict[str, Path] = {}
    for ext in CONTAINERS:
        if ext in (".mp4", ".mkv", ".webm"):
            out[ext] = synth.make_video(media_dir / f"av{ext}", duration=3.0)
        else:
            out[ext] = synth.make_audio(media_dir / f"audio{ext}", duration=3.0)
    return out


@pytest.fixture(scope="module")
def reference(media_dir: Path) -> NDArray[np.float32]:
    """The exact tones at 16 kHz, as synth writes them, to compare decoded audio against."""
    path = synth.make_audio(media_dir / "reference16k.wav", duration=4.0, sample_rate=RATE)
    return read_wav(path)[0]


def read_wav(path: Path) -> tuple[NDArray[np.float32], tuple[int, int, int, int]]:
    """Samples and (channels, sample width, rate, frames) of a WAV, read by the stdlib."""
    with wave.open(str(path), "rb") as w:
        header = (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes())
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return (pcm / 32768.0).astype(np.float32), header


def shift_against(
    samples: NDArray[np.float32], reference: NDArray[np.float32], start: float
) -> int:
    """How many samples ``samples`` (meant to start at ``start``) is late against the truth."""
    first = round(start * RATE)
    window = 400  # +-25 ms: tones are periodic, so the segment must span a frequency switch
    lags = range(-window, window + 1)
    scores = [
        float(np.dot(samples, reference[first + lag : first + lag + samples.size])) for lag in lags
    ]
    return lags[int(np.argmax(scores))]


def test_wav_second_by_second(audio_file: Path) -> None:
    for k in range(3):
        x = audio_samples(audio_file, k + 0.2, k + 0.8)
        assert x.dtype == np.float32 and x.ndim == 1
        assert x.size == round(0.6 * RATE)
        assert synth.dominant_frequency(x, RATE) == pytest.approx(synth.tone_freq(k), abs=3)
        assert 0.35 < float(np.abs(x).max()) <= 1.0


@pytest.mark.parametrize("ext", CONTAINERS)
def test_every_container_gives_the_tone_of_each_second(sources: dict[str, Path], ext: str) -> None:
    # From 0: the first frame of the file, after any encoder delay, is where the timeline starts.
    x = audio_samples(sources[ext], 0.0, 0.8)
    assert x.size == round(0.8 * RATE)
    assert synth.dominant_frequency(x, RATE) == pytest.approx(synth.tone_freq(0), abs=3)
    for k in (0, 1, 2):
        x = audio_samples(sources[ext], k + 0.15, k + 0.85)
        assert x.size == round(0.7 * RATE)
        assert synth.dominant_frequency(x, RATE) == pytest.approx(synth.tone_freq(k), abs=3)
        assert float(np.abs(x).max()) <= 1.0


@pytest.mark.parametrize("ext", [".wav", *CONTAINERS])
@pytest.mark.parametrize("boundary", [1.0, 2.0])
def test_frequency_switches_at_the_right_sample(
    sources: dict[str, Path],
    audio_file: Path,
    reference: NDArray[np.float32],
    ext: str,
    boundary: float,
) -> None:
    path = audio_file if ext == ".wav" else sources[ext]
    start = boundary - 0.23  # far from 0, so every format seeks and decodes its pre-roll
    x = audio_samples(path, start, boundary + 0.17)
    assert x.size == round(0.4 * RATE)
    assert abs(shift_against(x, reference, start)) <= MAX_SHIFT
    if ext not in (".mkv", ".webm"):
        # Sample by sample, the first 25 ms too: without the decoder's pre-roll, MP3 and AAC
        # start with a damaged frame (errors of 0.1 to 0.4 instead of a few hundredths).
        truth = reference[round(start * RATE) : round(start * RATE) + 400]
        assert float(np.abs(x[:400] - truth).max()) < 0.08
    before, after = x[: round(0.2 * RATE)], x[round(0.26 * RATE) :]
    assert synth.dominant_frequency(before, RATE) == pytest.approx(
        synth.tone_freq(int(boundary) - 1), abs=6
    )
    assert synth.dominant_frequency(after, RATE) == pytest.approx(
        synth.tone_freq(int(boundary)), abs=6
    )


@pytest.mark.parametrize(
    ("start", "end"),
    [(0.0, 1.0), (0.3, 0.30006), (1.23456, 2.98765), (0.5, None), (2.9, 3.0)],
)
def test_length_is_exact(audio_file: Path, start: float, end: float | None) -> None:
    x = audio_samples(audio_file, start, end)
    assert x.size == round(((3.0 if end is None else end) - start) * RATE)


def test_end_none_reads_to_the_end_of_a_video(sources: dict[str, Path]) -> None:
    x = audio_samples(sources[".mp4"], 2.5)
    assert x.size == round(0.5 * RATE)
    assert synth.dominant_frequency(x[-4000:], RATE) == pytest.approx(synth.tone_freq(2), abs=4)


def test_stereo_48k_is_mixed_to_mono_16k(media_dir: Path) -> None:
    path = synth.make_audio(
        media_dir / "stereo48.wav", duration=2.0, sample_rate=48_000, channels=2
    )
    x = audio_samples(path, 0.5, 1.5)
    assert x.shape == (RATE,)
    assert synth.dominant_frequency(x[: RATE // 2], RATE) == pytest.approx(
        synth.tone_freq(0), abs=3
    )
    assert synth.dominant_frequency(x[RATE // 2 :], RATE) == pytest.approx(
        synth.tone_freq(1), abs=3
    )
    # Identical channels average to the same level (a plain -3 dB sum would reach 0.566).
    assert float(np.abs(x).max()) == pytest.approx(0.4, abs=0.01)


def test_sample_rate_argument(audio_file: Path) -> None:
    x = audio_samples(audio_file, 1.1, 1.9, sample_rate=8000)
    assert x.size == 6400
    assert synth.dominant_frequency(x, 8000) == pytest.approx(synth.tone_freq(1), abs=3)


def test_default_rate_comes_from_settings(
    audio_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_MEDIA__AUDIO_SAMPLE_RATE", "22050")
    get_settings.cache_clear()
    assert audio_samples(audio_file, 0.0, 1.0).size == 22050


@pytest.mark.parametrize("ext", [".mkv", ".mov"])
def test_a_short_sound_track_is_silent_where_it_has_no_data(
    tmp_path: Path, reference: NDArray[np.float32], ext: str
) -> None:
    # Video from 0 to 3 s, sound only from 0.5 to 2 s: silence around it is no damage.
    path = _video_with_short_audio(tmp_path / f"short{ext}", reference, begin=0.5, end=2.0)
    x = audio_samples(path, 0.0, 3.0)
    assert x.size == 3 * RATE
    assert not x[: RATE // 2].any() and not x[2 * RATE :].any()
    np.testing.assert_allclose(x[RATE // 2 : 2 * RATE], reference[RATE // 2 : 2 * RATE], atol=1e-3)
    assert not audio_samples(path, 2.4, 3.0).any()  # after the sound track ends
    np.testing.assert_allclose(audio_samples(path, 1.2, 1.7), reference[19200:27200], atol=1e-3)


def _video_with_short_audio(
    path: Path, tones: NDArray[np.float32], *, begin: float, end: float
) -> Path:
    """A 3 s video track from 0 and lossless audio (``tones``) only from ``begin`` to ``end``."""
    with av.open(str(path), mode="w") as c:
        vs = c.add_stream("libx264", rate=25)
        assert isinstance(vs, av.video.stream.VideoStream)
        vs.width, vs.height, vs.pix_fmt = 64, 48, "yuv420p"
        aus = c.add_stream("pcm_s16le", rate=RATE, layout="mono")
        assert isinstance(aus, av.audio.stream.AudioStream)
        for i in range(75):
            frame = av.VideoFrame.from_ndarray(synth.index_pattern(i, 64, 48), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, 25)
            c.mux(vs.encode(frame))
        c.mux(vs.encode(None))
        first = round(begin * RATE)
        pcm = np.round(tones[first : round(end * RATE)] * 32768).astype(np.int16)
        for pos in range(0, pcm.size, 1600):
            aframe = av.AudioFrame.from_ndarray(
                pcm[None, pos : pos + 1600], format="s16", layout="mono"
            )
            aframe.sample_rate, aframe.pts, aframe.time_base = RATE, first + pos, Fraction(1, RATE)
            c.mux(aus.encode(aframe))
        c.mux(aus.encode(None))
    return path


def test_segment_writes_pcm16_mono_wav(
    sources: dict[str, Path], reference: NDArray[np.float32], tmp_path: Path, tmp_dir_guard: Path
) -> None:
    out = tmp_path / "nested" / "seg.wav"
    assert audio_segment(sources[".m4a"], 0.8, 2.35, out=out) == out
    samples, header = read_wav(out)
    assert header == (1, 2, RATE, round(1.55 * RATE))
    assert abs(shift_against(samples[:4000], reference, 0.8)) <= MAX_SHIFT
    assert synth.dominant_frequency(samples[-4000:], RATE) == pytest.approx(
        synth.tone_freq(2), abs=4
    )
    assert sorted(p.name for p in out.parent.iterdir()) == ["seg.wav"]


def test_segment_is_cached(audio_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = audio_segment(audio_file, 1.0, 2.0)
    assert first.is_relative_to(get_settings().cache_dir / "media")
    samples, header = read_wav(first)
    assert header == (1, 2, RATE, RATE)
    assert synth.dominant_frequency(samples, RATE) == pytest.approx(synth.tone_freq(1), abs=3)

    def no_decoding(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached segment was decoded again")

    monkeypatch.setattr("omnilab.media.audio.iter_audio", no_decoding)
    inode = first.stat().st_ino
    again = audio_segment(audio_file, 1.0, 2.0)
    assert again == first and again.stat().st_ino == inode
    # Another range is a different entry, and needs decoding.
    with pytest.raises(AssertionError, match="decoded again"):
        audio_segment(audio_file, 1.0, 2.5)


def test_segment_in_a_given_cache(audio_file: Path, tmp_path: Path) -> None:
    cache = MediaCache(tmp_path / "mine", max_bytes=1 << 30)
    path = audio_segment(audio_file, 0.0, 0.5, cache=cache)
    assert path.is_relative_to(tmp_path / "mine")
    assert read_wav(path)[1][3] == RATE // 2
    # end=None and the explicit end of the file are the same request.
    assert audio_segment(audio_file, 2.0, cache=cache) == audio_segment(
        audio_file, 2.0, 3.0, cache=cache
    )


def _truncated(src: Path, dst: Path) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 2])
    return dst


@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("silent", MediaErrorCode.NO_AUDIO_STREAM, ["silent.mp4", "no audio stream"]),
        ("image", MediaErrorCode.NO_AUDIO_STREAM, ["image.png", "image"]),
        ("reversed", MediaErrorCode.INVALID_RANGE, ["2.0 s", "1.0 s"]),
        ("negative", MediaErrorCode.TS_OOB, ["tones.wav", "-0.5 s", "3.0 s"]),
        ("past_end", MediaErrorCode.TS_OOB, ["tones.wav", "9.0 s", "duration 3.0 s"]),
        ("too_long", MediaErrorCode.TOO_LONG, ["2.5 s", "limit is 2.0 s", "MAX_AUDIO_SECONDS"]),
        ("missing", MediaErrorCode.NOT_FOUND, ["nothing.wav"]),
        ("empty", MediaErrorCode.CORRUPT, ["empty.wav", "empty"]),
        ("truncated", MediaErrorCode.CORRUPT, ["cut.mp3", "truncated", "2.8 s"]),
        ("truncated_video", MediaErrorCode.CORRUPT, ["cut.mkv", "truncated", "2.8 s"]),
    ],
)
def test_errors_leave_nothing_behind(
    case: str,
    code: MediaErrorCode,
    words: list[str],
    audio_file: Path,
    silent_video: Path,
    image_file: Path,
    sources: dict[str, Path],
    tmp_path: Path,
    tmp_dir_guard: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, start, end = audio_file, 0.0, 1.0
    if case == "silent":
        path = silent_video
    elif case == "image":
        path = image_file
    elif case == "reversed":
        start, end = 2.0, 1.0
    elif case == "negative":
        start = -0.5
    elif case == "past_end":
        end = 9.0
    elif case == "too_long":
        monkeypatch.setenv("OMNILAB_MEDIA__MAX_AUDIO_SECONDS", "2")
        get_settings.cache_clear()
        start, end = 0.5, 3.0
    elif case == "missing":
        path = tmp_path / "nothing.wav"
    elif case == "empty":
        path = tmp_path / "empty.wav"
        path.touch()
    elif case == "truncated":
        # The MP3 header still promises 3 s; the data stops at about 1.5 s.
        path, start, end = _truncated(sources[".mp3"], tmp_path / "cut.mp3"), 2.0, 2.8
    elif case == "truncated_video":
        # Matroska opens with half its data: sound and picture both stop early.
        path, start, end = _truncated(sources[".mkv"], tmp_path / "cut.mkv"), 2.0, 2.8
    out = tmp_path / "out" / "seg.wav"
    for call in (
        lambda: audio_segment(path, start, end, out=out),
        lambda: audio_segment(path, start, end),
        lambda: audio_samples(path, start, end),
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


def test_bad_sample_rate_is_a_programming_error(audio_file: Path) -> None:
    with pytest.raises(ValueError, match="sample_rate"):
        audio_samples(audio_file, 0.0, 1.0, sample_rate=0)
