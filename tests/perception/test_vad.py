"""Voice activity: the hysteresis rules on made-up probabilities, and Silero on real audio."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from omnilab.media import MediaError, MediaErrorCode
from omnilab.perception.vad import WINDOW_SECONDS, detect_speech, segments_from_probs


def probs_from(spans: list[tuple[float, float]], total: float) -> NDArray[np.float32]:
    """Probability 0.9 inside ``spans`` (seconds), 0.05 elsewhere."""
    n = round(total / WINDOW_SECONDS)
    p = np.full(n, 0.05, dtype=np.float32)
    for a, b in spans:
        p[round(a / WINDOW_SECONDS) : round(b / WINDOW_SECONDS)] = 0.9
    return p


def test_segments_follow_probabilities_with_padding() -> None:
    segs = segments_from_probs(probs_from([(1.0, 2.0), (4.0, 5.5)], 8.0), pad=0.1)
    assert [(round(s.start, 1), round(s.end, 1)) for s in segs] == [(0.9, 2.1), (3.9, 5.6)]
    assert all(s.confidence == pytest.approx(0.9) for s in segs)


def test_short_pause_does_not_split_and_short_blip_is_dropped() -> None:
    p = probs_from([(1.0, 2.0), (2.15, 3.0), (6.0, 6.1)], 8.0)
    segs = segments_from_probs(p, min_silence=0.3, min_speech=0.25, pad=0.0)
    assert len(segs) == 1
    assert segs[0].start == pytest.approx(1.0, abs=0.04)
    assert segs[0].end == pytest.approx(3.0, abs=0.04)


def test_padding_never_makes_segments_overlap() -> None:
    segs = segments_from_probs(probs_from([(1.0, 2.0), (2.4, 3.0)], 4.0), min_silence=0.3, pad=0.3)
    assert len(segs) == 2
    assert segs[0].end <= segs[1].start
    assert segs[0].end == pytest.approx(2.2, abs=0.05)


def test_speech_runs_to_the_end_and_is_clipped_to_duration() -> None:
    segs = segments_from_probs(probs_from([(1.0, 4.0)], 4.0), pad=0.5, duration=3.99)
    assert segs[-1].end == pytest.approx(3.99)


def test_shared_speech_sample(speech_wav: Path) -> None:
    segs = detect_speech(speech_wav)
    # The reader starts after about 1.1 s and pauses between phrases; the file is 20.8 s.
    assert 0.8 < segs[0].start < 1.4
    assert 19.5 < segs[-1].end <= 20.8
    assert len(segs) >= 4
    covered = sum(s.end - s.start for s in segs)
    assert 14.0 < covered < 20.0


def test_tones_noise_and_silence_have_no_speech(
    tone: NDArray[np.float32], noise: NDArray[np.float32], silence_wav: Path
) -> None:
    assert detect_speech(tone) == []
    assert detect_speech(noise) == []
    assert detect_speech(silence_wav) == []
    assert detect_speech(np.zeros(0, dtype=np.float32)) == []


def test_speech_is_found_where_it_was_placed(speech: NDArray[np.float32]) -> None:
    quiet = np.zeros(5 * 16_000, dtype=np.float32)
    segs = detect_speech(np.concatenate([quiet, speech[: 8 * 16_000]]))
    assert 5.8 < segs[0].start < 6.4
    assert segs[-1].end <= 13.0 + 0.2


def test_video_without_audio(mute_talk_video: Path) -> None:
    with pytest.raises(MediaError) as err:
        detect_speech(mute_talk_video)
    assert err.value.code is MediaErrorCode.NO_AUDIO_STREAM
    assert "no audio stream" in str(err.value)


def test_bad_sample_shape() -> None:
    with pytest.raises(ValueError, match="one-dimensional"):
        detect_speech(np.zeros((2, 100), dtype=np.float32))
