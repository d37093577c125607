"""Audio events: a sound track cut into ``speech`` / ``music`` / ``silence`` / ``noise`` spans.

The embedded tagger decides per 32 ms window (the VAD's windows), then per half second:

- ``speech``: Silero VAD speech probability at or above ``perception.vad_threshold`` (this wins
  over the level rule, so quiet consonants and short pauses stay inside speech);
- ``silence``: RMS level below ``-45 dBFS`` (a quiet room; digital silence is far lower);
- ``music``: otherwise, when the spectrum is tonal: spectral flatness (geometric over
  arithmetic mean of the 60 Hz - 8 kHz power spectrum) below 0.2, i.e. energy sits in a few
  harmonic peaks, as in instruments, tones and singing without words;
- ``noise``: everything else (broadband sound: traffic, applause, wind, hiss).

Half-second blocks take the majority label of their windows (speech already from a third of
them); a median over three blocks removes one-block flickers (never speech); spans shorter than
one second but speech are merged into their longer neighbour, so a short spoken phrase in a
quiet clip stays ``speech``.
Speech over music is labelled ``speech`` (the VAD wins). Another tagger, e.g. a model trained on
AudioSet, plugs in with ``taggers.register(name, factory)``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.perception._audio import SAMPLE_RATE, AudioInput, load_samples
from omnilab.perception._registry import Registry
from omnilab.perception.types import AudioEvent, EventLabel
from omnilab.perception.vad import WINDOW, WINDOW_SECONDS, speech_probs

__all__ = ["AudioTagger", "EmbeddedTagger", "audio_events", "merge_labels", "taggers"]

SILENCE_DBFS = -45.0
TONAL_FLATNESS = 0.2
BLOCK_SECONDS = 0.5
MIN_EVENT_SECONDS = 1.0
_ORDER = [EventLabel.SILENCE, EventLabel.SPEECH, EventLabel.MUSIC, EventLabel.NOISE]
_SPEECH = _ORDER.index(EventLabel.SPEECH)
SPEECH_SHARE = 1 / 3
"""A half-second block with at least this share of speech windows is speech."""


class AudioTagger(Protocol):
    """An audio event backend: label spans of 16 kHz mono samples."""

    def tag(self, samples: NDArray[np.float32], *, sample_rate: int) -> list[AudioEvent]:
        """Events covering the samples in time order, times from their start."""
        ...


taggers: Registry[AudioTagger] = Registry("audio event tagger", "events_backend")
"""The audio tagger registry; ``taggers.register(name, factory)`` adds one."""


def audio_events(audio: AudioInput, *, backend: str | None = None) -> list[AudioEvent]:
    """Label a file's audio track (or 16 kHz samples) as speech / music / silence / noise spans.

    Raises:
        MediaError: The file is unreadable or has no audio stream (``NO_AUDIO_STREAM``).
    """
    tagger = taggers.get(backend)
    samples = load_samples(audio)
    if samples.size == 0:
        return []
    return tagger.tag(samples, sample_rate=SAMPLE_RATE)


class EmbeddedTagger:
    """VAD plus level and spectral flatness (see the module docstring for the rules)."""

    def tag(self, samples: NDArray[np.float32], *, sample_rate: int) -> list[AudioEvent]:
        """Events for ``samples`` (16 kHz mono), covering them end to end."""
        if sample_rate != SAMPLE_RATE:
            raise ValueError(f"the embedded tagger needs 16 kHz audio (got {sample_rate} Hz)")
        threshold = get_settings().perception.vad_threshold
        labels = window_labels(samples, speech_probs(samples), threshold=threshold)
        return merge_labels(
            labels, window_seconds=WINDOW_SECONDS, duration=samples.size / SAMPLE_RATE
        )


taggers.register("embedded", EmbeddedTagger)


def window_labels(
    samples: NDArray[np.float32], probs: NDArray[np.float32], *, threshold: float
) -> NDArray[np.int8]:
    """One label per VAD window, as an index into the label order silence/speech/music/noise."""
    n = probs.size
    frames = np.pad(samples, (0, n * WINDOW - samples.size)).reshape(n, WINDOW)
    rms = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1))
    dbfs = 20.0 * np.log10(np.maximum(rms, 1e-10))
    spectrum = np.abs(np.fft.rfft(frames * np.hanning(WINDOW), axis=1)) ** 2
    freqs = np.fft.rfftfreq(WINDOW, d=1.0 / SAMPLE_RATE)
    band = spectrum[:, (freqs >= 60.0) & (freqs <= 8000.0)] + 1e-12
    flatness = np.exp(np.mean(np.log(band), axis=1)) / np.mean(band, axis=1)
    labels = np.full(n, _ORDER.index(EventLabel.NOISE), dtype=np.int8)
    labels[flatness < TONAL_FLATNESS] = _ORDER.index(EventLabel.MUSIC)
    labels[dbfs < SILENCE_DBFS] = _ORDER.index(EventLabel.SILENCE)
    # After silence: quiet windows inside words and short pauses belong to the speech around them.
    labels[probs >= threshold] = _ORDER.index(EventLabel.SPEECH)
    return labels


def merge_labels(
    labels: NDArray[np.int8], *, window_seconds: float, duration: float
) -> list[AudioEvent]:
    """Smooth per-window labels into spans (block majority, median of three, short spans merged)."""
    per_block = max(1, round(BLOCK_SECONDS / window_seconds))
    n_blocks = -(-labels.size // per_block)
    blocks = np.empty(n_blocks, dtype=np.int8)
    for b in range(n_blocks):
        counts = np.bincount(labels[b * per_block : (b + 1) * per_block], minlength=4)
        # a short word fills a third of a block: speech need not be the majority to count
        spoken = counts[_SPEECH] >= SPEECH_SHARE * counts.sum()
        blocks[b] = _SPEECH if spoken else counts.argmax()
    smooth = blocks.copy()
    for b in range(1, n_blocks - 1):
        if blocks[b - 1] == blocks[b + 1] != blocks[b] != _SPEECH:
            smooth[b] = blocks[b - 1]
    block_s = per_block * window_seconds
    runs: list[list[int]] = []  # [label, first block, end block]
    for b, lab in enumerate(smooth.tolist()):
        if runs and runs[-1][0] == lab:
            runs[-1][2] = b + 1
        else:
            runs.append([lab, b, b + 1])
    min_blocks = max(1, round(MIN_EVENT_SECONDS / block_s))
    while len(runs) > 1:
        # speech stays however short ("Hello world." is under a second): it is what is asked about
        short = [i for i, r in enumerate(runs) if r[2] - r[1] < min_blocks and r[0] != _SPEECH]
        if not short:
            break
        i = min(short, key=lambda k: runs[k][2] - runs[k][1])
        left = runs[i - 1] if i > 0 else None
        right = runs[i + 1] if i + 1 < len(runs) else None
        target = (
            left if right is None or (left is not None and _len(left) >= _len(right)) else right
        )
        assert target is not None
        target[1], target[2] = min(target[1], runs[i][1]), max(target[2], runs[i][2])
        del runs[i]
        runs = _join_equal(runs)
    events = []
    for lab, b0, b1 in runs:
        w0, w1 = b0 * per_block, min(labels.size, b1 * per_block)
        agree = float(np.mean(labels[w0:w1] == lab)) if w1 > w0 else 0.0
        events.append(
            AudioEvent(
                label=_ORDER[lab],
                start=round(b0 * block_s, 3),
                end=round(min(duration, b1 * block_s), 3),
                confidence=round(agree, 3),
            )
        )
    return events


def _len(run: list[int]) -> int:
    return run[2] - run[1]


def _join_equal(runs: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for r in runs:
        if out and out[-1][0] == r[0]:
            out[-1][2] = r[2]
        else:
            out.append(r)
    return out
