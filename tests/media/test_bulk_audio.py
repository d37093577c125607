"""The bulk soundtrack path (FFmpeg's amovie graph) gives today's exact-loop output, byte for byte.

``iter_audio`` (the per-packet loop) is the reference: the bulk path must yield the same float
samples and ``audio_segment`` the same WAV bytes, on every container, or step aside. The WAV's
PCM16 is made inside FFmpeg's graph (``PCM16_FILTERS``): it must be numpy's conversion to the
bit, on the values where rounding decides.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise
from pathlib import Path

import av
import numpy as np
import pytest
from numpy.typing import NDArray

from omnilab.media import _bulk_audio, audio, synth
from omnilab.media._bulk_audio import PCM16_FILTERS, IrregularError, iter_bulk
from omnilab.media._float_audio import FloatWindow, to_pcm16
from omnilab.media._timeline import Pcm16Window
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


@pytest.mark.parametrize(
    "name", [".mp3", ".flac", ".m4a", ".ogg", ".wav", ".mp4", ".mkv", ".webm", "stereo48k.mp4"]
)
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
    info = probe(path)
    with pytest.raises(IrregularError, match="jump"):  # the PCM16 graph sees it the same way
        list(iter_bulk(info, 0.0, _end(info, None), rate=RATE, layout="mono", pcm16=True))
    x = audio.audio_samples(path)
    assert np.array_equal(x, np.clip(_exact(path, 0.0, None), -1.0, 1.0))
    assert not x[RATE + 200 : round(1.5 * RATE) - 200].any()
    assert x[: RATE - 200].any() and x[round(1.5 * RATE) + 200 :].any()


@pytest.mark.parametrize("name", [".mp3", ".m4a", ".ogg", ".mkv", ".webm", "stereo48k.mp4"])
@pytest.mark.parametrize(("start", "end"), [(0.0, None), (0.3, 2.2), (0.0, 1.0), (0.1, 2.95)])
def test_bulk_pcm16_is_the_float_blocks_converted(
    files: dict[str, Path], name: str, start: float, end: float | None
) -> None:
    """Cut, trimmed and padded on the timeline like the float blocks, then numpy's PCM16."""
    info = probe(files[name])
    e = _end(info, end)
    pcm = b"".join(iter_bulk(info, start, e, rate=RATE, layout="mono", pcm16=True))
    exact = b"".join(map(to_pcm16, audio.iter_audio(info, start, e, rate=RATE, layout="mono")))
    assert len(pcm) == 2 * round((e - start) * RATE)
    assert pcm == exact


def _boundary_samples() -> NDArray[np.float32]:
    """Where PCM16 rounding decides, and where clipping does.

    Four float32 steps either side of every (k + 0.5) / 32767 (the values whose product with
    32767 lies next to a rounding tie), both signs; +-1 and the floats next to them; far out of
    range, infinities, the smallest floats; and uniform noise a little beyond full scale.
    """
    mids = ((np.arange(32_768, dtype=np.float64) + 0.5) / 32_767).astype(np.float32)
    near = [mids]
    up, down = mids, mids
    for _ in range(4):
        up = np.nextafter(up, np.float32(2))
        down = np.nextafter(down, np.float32(-2))
        near += [up, down]
    one = np.float32(1.0)
    edges = [one, np.nextafter(one, np.float32(0)), np.nextafter(one, np.float32(2)), 1.5, 3e38]
    edges += [np.inf, 0.0, 1e-45, 1e-40, 2.0**-16, 1.0 / 65_534]
    ends = np.array(edges, dtype=np.float32)
    noise = np.random.default_rng(48).uniform(-1.2, 1.2, 200_000).astype(np.float32)
    half = np.concatenate([*near, ends])
    return np.concatenate([half, -half, noise]).astype(np.float32)


def _through_graph(
    x: NDArray[np.float32], filters: tuple[tuple[str, dict[str, str]], ...]
) -> bytes:
    graph = av.filter.Graph()
    chain = [
        graph.add_abuffer(
            format="flt", sample_rate=RATE, layout="mono", time_base=Fraction(1, RATE)
        )
    ]
    chain += [graph.add(name, **options) for name, options in filters]
    chain.append(graph.add("abuffersink"))
    for a, b in pairwise(chain):
        a.link_to(b)
    graph.configure()
    out = bytearray()

    def drain() -> None:
        while True:
            try:
                frame = graph.pull()
            except (av.BlockingIOError, EOFError):
                return
            assert isinstance(frame, av.AudioFrame) and frame.format.name == "s16"
            out.extend(bytes(frame.planes[0])[: 2 * frame.samples])

    for pos in range(0, x.size, 16_000):
        frame = av.AudioFrame.from_ndarray(x[None, pos : pos + 16_000], format="flt", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = RATE, pos, Fraction(1, RATE)
        graph.push(frame)
        drain()
    graph.push(None)
    drain()
    return bytes(out)


def test_ffmpeg_pcm16_is_numpys_to_the_bit() -> None:
    """The graph's conversion equals ``to_pcm16`` on every boundary value; one LSB off fails.

    (Proven beforehand on every float32 from 2**-16 to 1.5 of both signs, 276,824,066 values.)
    """
    x = _boundary_samples()
    expected = to_pcm16(x[None, :])
    got = _through_graph(x, PCM16_FILTERS)
    assert len(got) == len(expected) == 2 * x.size
    diff = np.flatnonzero(np.frombuffer(got, np.int16) != np.frombuffer(expected, np.int16))
    assert diff.size == 0, f"{diff.size} samples differ, first at {x[diff[:5]]}"
    # The samples catch a conversion one float32 step (or one LSB) away from it: FFmpeg's own
    # (times 32768, saturating) and a gain one step below 32767/32768 both differ.
    for filters in (
        (("aformat", {"sample_fmts": "s16"}),),
        (("asoftclip", {"type": "hard", "output": "0.99996942"}), PCM16_FILTERS[1]),
    ):
        assert _through_graph(x, filters) != expected


def test_pcm16_window_places_blocks_like_the_float_one(files: dict[str, Path]) -> None:
    """Overlaps cut, gaps and the tail filled with silence: the same samples either way."""
    info = probe(files[".wav"])
    x = np.random.default_rng(1).uniform(-1.1, 1.1, 4_000).astype(np.float32)
    # (timeline position, samples): contiguous, overlapping by 300, then a gap of 700.
    pieces = [(0, x[:1_000]), (1_000, x[1_000:2_000]), (1_700, x[2_000:3_000]), (3_400, x[3_000:])]

    def frame(data: NDArray[np.float32] | NDArray[np.int16], fmt: str, at: int) -> av.AudioFrame:
        f = av.AudioFrame.from_ndarray(data[None, :], format=fmt, layout="mono")
        f.sample_rate, f.pts, f.time_base = RATE, at, Fraction(1, RATE)
        return f

    floats, pcm = FloatWindow(200, 4_800, 80), Pcm16Window(200, 4_800, 80)
    floats.pos = pcm.pos = 0
    from_floats, from_pcm = bytearray(), bytearray()
    for at, piece in pieces:
        for block in floats.push(frame(piece, "fltp", at), info):
            from_floats += to_pcm16(block)
        as_pcm = np.frombuffer(to_pcm16(piece[None, :]), np.int16)
        for view in pcm.push(frame(as_pcm, "s16", at), info):
            from_pcm += view
    for block in floats.silence(floats.stop - (floats.pos or 0), 1):
        from_floats += to_pcm16(block)
    for view in pcm.silence(pcm.stop - (pcm.pos or 0), 1):
        from_pcm += view
    assert from_pcm == from_floats
    assert len(from_pcm) == 2 * 4_800
    assert from_pcm[2 * 1_800 : 2 * 1_900] == to_pcm16(x[None, 2_300:2_400])  # the overlap cut
    assert not from_pcm[2 * (2_700 - 200) : 2 * (3_400 - 200)].strip(b"\0")  # the gap
    assert not from_pcm[2 * (4_400 - 200) :].strip(b"\0")  # the tail


def test_without_the_pcm16_filters_the_exact_loop_writes_the_same_wav(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An FFmpeg lacking a filter option falls back to the loop (and numpy), same bytes."""
    info = probe(files[".m4a"])
    reference = tmp_path / "exact.wav"
    audio._write_wav(
        reference, RATE, audio.iter_audio(info, 0.0, _end(info, None), rate=RATE, layout="mono")
    )
    bogus = (("asoftclip", {"type": "hard", "no_such_option": "1"}),)
    monkeypatch.setattr(_bulk_audio, "PCM16_FILTERS", bogus)
    with pytest.raises(IrregularError, match="PCM16"):
        list(iter_bulk(info, 0.0, 1.0, rate=RATE, layout="mono", pcm16=True))
    out = audio.audio_segment(files[".m4a"], out=tmp_path / "loop.wav")
    assert out.read_bytes() == reference.read_bytes()
