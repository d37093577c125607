"""The bulk soundtrack path (FFmpeg's amovie graph) gives today's exact-loop output, byte for byte.

``iter_audio`` (the per-packet loop) is the reference: the bulk path must yield the same float
samples and ``audio_segment`` the same WAV bytes, on every container, or step aside.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from numpy.typing import NDArray

from omnilab.media import audio, synth
from omnilab.media._bulk_audio import IrregularError, iter_bulk
from omnilab.media.probe import MediaInfo, probe

RATE = 16_000


@pytest.fixture(scope="module")
def files(media_dir: Path) -> dict[str, Path]:
    """Tones in every container, mono and stereo, 44.1 and 48 kHz."""
    out: dict[str, Path] = {}
    for ext in (".mp3", ".flac", ".m4a", ".ogg", ".wav"):
        out[ext] = synth.make_audio(media_dir / f"bulk{ext}", duration=3.0)
    for ext in (".mp4", ".mkv", ".webm"):
        out[ext] = synth.make_video(media_dir / f"bulk{ext}", duration=3.0)
    out["stereo48k.mp4"] = synth.make_video(
        media_dir / "bulk-stereo48k.mp4", duration=3.0, sample_rate=48_000, channels=2
    )
    return out


def _end(info: MediaInfo, end: float | None) -> float:
    assert info.duration is not None
    return info.duration if end is None else end


def _exact(path: Path, start: float, end: float | None) -> NDArray[np.float32]:
    info = probe(path)
    e = _end(info, end)
    blocks = list(audio.iter_audio(info, start, e, rate=RATE, layout="mono"))
    return np.concatenate([b[0] for b in blocks])


def _bulk(path: Path, start: float, end: float | None) -> NDArray[np.float32]:
    info = probe(path)
    e = _end(info, end)
    blocks = list(iter_bulk(info, start, e, rate=RATE, layout="mono"))
    return np.concatenate([b[0] for b in blocks])


@pytest.mark.parametrize(
    "name", [".mp3", ".flac", ".m4a", ".ogg", ".wav", ".mp4", ".mkv", ".webm", "stereo48k.mp4"]
)
@pytest.mark.parametrize(("start", "end"), [(0.0, None), (0.3, 2.2), (0.0, 1.0)])
def test_bulk_samples_are_the_exact_loops(
    files: dict[str, Path], name: str, start: float, end: float | None
) -> None:
    bulk = _bulk(files[name], start, end)
    exact = _exact(files[name], start, end)
    assert bulk.dtype == exact.dtype == np.float32
    assert bulk.size == exact.size
    assert np.array_equal(bulk, exact)


@pytest.mark.parametrize("name", [".m4a", ".mp4", ".webm", "stereo48k.mp4"])
def test_segment_wav_is_byte_identical_and_decoded_in_bulk(
    files: dict[str, Path], name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = probe(files[name])
    reference = tmp_path / "exact.wav"
    audio._write_wav(
        reference, RATE, audio.iter_audio(info, 0.0, _end(info, None), rate=RATE, layout="mono")
    )

    def no_loop(*args: object, **kwargs: object) -> None:
        raise AssertionError("the per-packet loop ran")

    monkeypatch.setattr("omnilab.media.audio.iter_audio", no_loop)
    out = audio.audio_segment(files[name], out=tmp_path / "bulk.wav")
    assert out.read_bytes() == reference.read_bytes()
    samples = audio.audio_samples(files[name])
    assert samples.size == round(_end(info, None) * RATE)


def test_a_range_that_needs_a_seek_uses_the_exact_loop(files: dict[str, Path]) -> None:
    with pytest.raises(IrregularError, match="seek"):
        _bulk(files[".mp4"], 1.0, 2.0)
    x = audio.audio_samples(files[".mp4"], 1.0, 2.0)
    assert np.array_equal(x, np.clip(_exact(files[".mp4"], 1.0, 2.0), -1.0, 1.0))


def test_a_gap_in_the_timestamps_falls_back_to_the_exact_loop(tmp_path: Path) -> None:
    """Sound from 0 to 1 s and from 1.5 to 2.5 s: the loop fills the gap with silence."""
    path = tmp_path / "gap.mkv"
    tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(RATE) / RATE) * 32767).astype(np.int16)
    with av.open(str(path), mode="w") as c:
        aus = c.add_stream("pcm_s16le", rate=RATE, layout="mono")
        assert isinstance(aus, av.audio.stream.AudioStream)
        for first in (0, round(1.5 * RATE)):
            for pos in range(0, RATE, 1600):
                frame = av.AudioFrame.from_ndarray(
                    tone[None, pos : pos + 1600], format="s16", layout="mono"
                )
                frame.sample_rate, frame.pts = RATE, first + pos
                frame.time_base = Fraction(1, RATE)
                c.mux(aus.encode(frame))
        c.mux(aus.encode(None))
    with pytest.raises(IrregularError, match="jump"):
        _bulk(path, 0.0, None)
    x = audio.audio_samples(path)
    assert np.array_equal(x, np.clip(_exact(path, 0.0, None), -1.0, 1.0))
    assert not x[RATE + 200 : round(1.5 * RATE) - 200].any()
    assert x[: RATE - 200].any() and x[round(1.5 * RATE) + 200 :].any()
