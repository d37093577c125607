"""Audio events: a track assembled from known parts is labelled part by part."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from omnilab.media import MediaError, MediaErrorCode
from omnilab.perception import EventLabel, PerceptionError, audio_events
from omnilab.perception.events import merge_labels

RATE = 16_000


def label_at(events, t: float) -> EventLabel:  # type: ignore[no-untyped-def]
    return next(e.label for e in events if e.start <= t < e.end)


def test_each_part_of_an_assembled_track(
    speech: NDArray[np.float32], tone: NDArray[np.float32], noise: NDArray[np.float32]
) -> None:
    silence = np.zeros(2 * RATE, dtype=np.float32)
    # 0-2 silence, 2-5 tone, 5-8 noise, 8-10 silence, 10-18 speech (the sample's first 8 s
    # begin with 1.1 s of room tone), 18-20 silence.
    track = np.concatenate([silence, tone, noise, silence, speech[: 8 * RATE], silence])
    events = audio_events(track)
    assert events[0].start == 0.0 and events[-1].end == pytest.approx(20.0)
    assert all(a.end == b.start for a, b in itertools.pairwise(events))
    assert label_at(events, 1.0) is EventLabel.SILENCE
    assert label_at(events, 3.5) is EventLabel.MUSIC
    assert label_at(events, 6.5) is EventLabel.NOISE
    assert label_at(events, 9.0) is EventLabel.SILENCE
    for t in (12.0, 14.0, 16.0):
        assert label_at(events, t) is EventLabel.SPEECH
    assert label_at(events, 19.5) is EventLabel.SILENCE
    # Boundaries land within one analysis block (about half a second) of the truth.
    music = next(e for e in events if e.label is EventLabel.MUSIC)
    assert music.start == pytest.approx(2.0, abs=0.55) and music.end == pytest.approx(5.0, abs=0.55)
    assert all(0.5 <= e.confidence <= 1.0 for e in events)


def test_speech_file_is_mostly_speech(speech_wav: Path) -> None:
    events = audio_events(speech_wav)
    speech = sum(e.end - e.start for e in events if e.label is EventLabel.SPEECH)
    assert speech > 17.0
    assert events[0].label is EventLabel.SILENCE and events[0].end < 1.6


def test_silent_file_is_one_silence(silence_wav: Path) -> None:
    events = audio_events(silence_wav)
    assert [(e.label, e.start, e.end) for e in events] == [(EventLabel.SILENCE, 0.0, 2.0)]


def test_flickers_and_short_spans_are_smoothed() -> None:
    per_block = 16  # windows per half-second block
    # 3 s music, one block of noise, 3 s music, then 0.5 s of silence at the very end.
    labels = np.array([2] * 96 + [3] * per_block + [2] * 96 + [0] * per_block, dtype=np.int8)
    events = merge_labels(labels, window_seconds=0.032, duration=labels.size * 0.032)
    assert [e.label for e in events] == [EventLabel.MUSIC]
    assert events[0].end == pytest.approx(labels.size * 0.032)


def test_empty_and_missing_audio(mute_talk_video: Path) -> None:
    assert audio_events(np.zeros(0, dtype=np.float32)) == []
    with pytest.raises(MediaError) as err:
        audio_events(mute_talk_video)
    assert err.value.code is MediaErrorCode.NO_AUDIO_STREAM
    with pytest.raises(PerceptionError, match="unknown audio event tagger 'yamnet'"):
        audio_events(np.zeros(10, dtype=np.float32), backend="yamnet")


@pytest.mark.parametrize("seconds", [0.6, 0.9])
def test_a_short_phrase_in_a_quiet_clip_is_speech(
    speech: NDArray[np.float32], seconds: float
) -> None:
    """Issue 44.21: a clip whose transcript is "Hello world." was all ``silence``: spans under a
    second were merged away, speech among them."""
    phrase = speech[3 * RATE : 3 * RATE + int(seconds * RATE)]
    quiet = np.zeros(RATE // 2, dtype=np.float32)
    events = audio_events(np.concatenate([quiet, phrase, quiet, quiet]))
    spoken = [e for e in events if e.label == EventLabel.SPEECH]
    assert spoken and spoken[0].start <= 0.5 and spoken[0].end >= 0.5 + seconds - 0.1, events
    assert events[-1].label == EventLabel.SILENCE
