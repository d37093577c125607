"""Smart cut: whole GOPs copied, edges encoded; the clip shows the same frames at the same
times, with the same sound, as the clip encoded whole (which test_clip checks for exactness)."""

from __future__ import annotations

import importlib
from pathlib import Path

import av
import numpy as np
import pytest

from omnilab.media import _smartcut as smartcut
from omnilab.media import probe, synth
from omnilab.media.clips import clip

clips_module = importlib.import_module("omnilab.media.clips")
FPS = 25


@pytest.fixture()
def used(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each clip was written by smart cut."""
    calls: list[bool] = []
    real = clips_module._encode_smart

    def spy(*args: object) -> bool:
        result = real(*args)
        calls.append(result)
        return bool(result)

    monkeypatch.setattr(clips_module, "_encode_smart", spy)
    return calls


def _decoded(path: Path) -> tuple[list[tuple[float, int]], list[np.ndarray], np.ndarray]:
    with av.open(str(path)) as c:
        vs = c.streams.video[0]
        pictures, times = [], []
        for f in c.decode(vs):
            assert f.pts is not None and f.time_base is not None
            times.append((round(float(f.pts * f.time_base), 4), synth.read_index(f.to_image())))
            pictures.append(f.to_ndarray(format="gray").astype(np.float64))
    with av.open(str(path)) as c:
        sound = np.concatenate([f.to_ndarray() for f in c.decode(c.streams.audio[0])], axis=1)
    return times, pictures, sound


@pytest.fixture(scope="module")
def no_b_frames(media_dir: Path) -> Path:
    """Like the bench's long video: ultrafast, so no B-frames and no deblocking."""
    return synth.make_video(media_dir / "ultrafast.mp4", duration=4.0, preset="ultrafast")


@pytest.mark.parametrize("source", ["video", "no_b_frames"])
@pytest.mark.parametrize(
    ("start", "end"), [(1.0, 3.0), (1.3, 3.61), (0.0, 4.0), (0.5, 2.7), (1.41, 3.09)]
)
def test_smart_cut_matches_the_whole_encode(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    used: list[bool],
    source: str,
    start: float,
    end: float,
) -> None:
    path: Path = request.getfixturevalue(source)
    smart = clip(path, start, end, out=tmp_path / "smart.mp4")
    assert used == [True]
    whole = clip(path, start, end, out=tmp_path / "whole.mp4", smart_cut=False)
    assert used == [True]  # smart_cut=False does not try
    times, pictures, sound = _decoded(smart)
    ref_times, ref_pictures, ref_sound = _decoded(whole)
    # The same frames (the index drawn in each) at the same clip times, first one at 0.
    assert times == ref_times and times[0][0] == 0.0
    assert times[0][1] == round(start * FPS)  # the nearest frame to start
    # The pictures differ only by encoding (copied GOPs are the source's own pictures).
    assert max(np.mean((a - b) ** 2) for a, b in zip(pictures, ref_pictures, strict=True)) < 4
    assert np.array_equal(sound, ref_sound)  # the sound path is the same: in sync as before
    info = probe(smart)
    assert info.duration == pytest.approx(end - start, abs=1 / FPS + 1024 / 44_100)
    with av.open(str(smart)) as c:
        extradata = bytes(c.streams.video[0].codec_context.extradata or b"")
    assert extradata[0] == 1 and extradata[5] & 0x1F == 2  # avcC with both SPS
    with av.open(str(smart)) as c:
        vs = c.streams.video[0]
        keys = [
            [u[0] & 0x1F for u in smartcut._units(bytes(p), 4)]
            for p in c.demux(vs)
            if p.size and p.is_keyframe
        ]
    # Every GOP, copied or encoded, starts at an IDR, and no parameter set is in-band.
    assert len(keys) >= 2 and all(5 in k and 7 not in k and 8 not in k for k in keys)


def test_smart_cut_only_where_it_applies(
    video: Path, media_dir: Path, tmp_path: Path, used: list[bool]
) -> None:
    clip(video, 1.48, 2.6, out=tmp_path / "a.mp4")  # no whole GOP between keyframes 2 and 3
    assert used == [False]
    used.clear()
    clip(video, 0.5, 3.5, out=tmp_path / "b.mp4", max_edge=100)  # scaled: nothing to copy
    assert used == []
    turned = synth.make_video(media_dir / "turned-sc.mp4", duration=3.0, rotation=90)
    clip(turned, 0.2, 2.8, out=tmp_path / "c.mp4")  # turned upright in the pixels
    assert used == [False]


def test_smart_and_whole_clips_are_cached_apart(video: Path, used: list[bool]) -> None:
    smart = clip(video, 0.5, 3.5)
    whole = clip(video, 0.5, 3.5, smart_cut=False)
    assert smart != whole and used == [True]
    assert clip(video, 0.5, 3.5) == smart and used == [True]  # a cache hit: nothing encoded


def test_nal_unit_forms() -> None:
    units = [b"\x67\x64\x00\x1f\xac", b"\x68\xee\x3c\x80", b"\x65\x88\x84\x00\x21"]
    prefixed = b"".join(len(u).to_bytes(4, "big") + u for u in units)
    assert smartcut.to_annexb(prefixed, 4) == smartcut.annexb(units)
    sps, pps, datas = smartcut.encoded_edges([av.Packet(smartcut.annexb([b"\x09\xf0", *units]))])
    assert (sps, pps, datas) == ([units[0]], [units[1]], [smartcut.annexb(units[2:])])
    # Parameter-set ids: SPS id after profile, constraints and level; PPS id first.
    assert smartcut._ue_at(b"\x67\x64\x00\x1f\x80", 3) == 0
    assert smartcut._ue_at(b"\x67\x64\x00\x1f\x40", 3) == 1  # '010' is 1
    assert smartcut._ue_at(b"\x68\x60", 0) == 2  # '011' is 2
    assert smartcut._ue_at(b"\x67\x64\x00", 3) == -1  # cut short: no id to read
    assert smartcut._ue_at(b"\x68\x00", 0) == -1


def test_clips_cached_before_smart_cut_are_not_reused(
    video: Path, tmp_path: Path, used: list[bool]
) -> None:
    from omnilab.media.cache import MediaCache

    cache = MediaCache(tmp_path / "cache", max_bytes=1 << 30)
    # An entry under the key clips had before smart cut (version 1 of the clip's output).
    old_params = {"start": 0.5, "end": 3.5, "size": (320, 240), "v": 1}
    old = cache.get_or_create(
        cache.key(video, "clip", old_params), ".mp4", lambda p: p.write_bytes(b"old clip")
    )
    new = clip(video, 0.5, 3.5, cache=cache)
    assert new != old and used == [True] and probe(new).has_video


def test_a_silent_video_is_smart_cut_without_sound(
    media_dir: Path, tmp_path: Path, used: list[bool]
) -> None:
    silent = synth.make_video(media_dir / "silent-4s.mp4", duration=4.0, audio=False)
    out = clip(silent, 0.5, 3.5, out=tmp_path / "silent.mp4")
    info = probe(out)
    assert used == [True] and not info.has_audio
    assert info.duration == pytest.approx(3.0, abs=1 / FPS)


def test_a_failing_smart_cut_falls_back_to_the_whole_encode(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.media.errors import MediaError, MediaErrorCode

    def broken(*_args: object) -> None:
        raise MediaError(MediaErrorCode.CORRUPT, "damaged near the cut")

    monkeypatch.setattr(smartcut, "plan", broken)
    out = clip(video, 0.5, 3.5, out=tmp_path / "whole.mp4")
    assert probe(out).duration == pytest.approx(3.0, abs=1 / FPS + 1024 / 44_100)
