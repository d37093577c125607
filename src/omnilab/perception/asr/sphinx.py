"""The embedded ASR backend: CMU PocketSphinx with the US-English model from its wheel.

Fast (about a fifth of real time on one core) and fully offline, but a 2000s-era HMM
recogniser: expect a word error rate around 0.2 on clean read speech and much worse on noisy or
accented audio. Use ``whisper`` or ``openai`` when accuracy matters.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omnilab.perception.errors import PerceptionError, missing_package
from omnilab.perception.types import Segment, Word

__all__ = ["PocketSphinx"]

# Pauses at least this long start a new segment, so segments read like phrases.
_SEGMENT_GAP = 0.5
_MAX_SEGMENT = 15.0
# "<s>", "</s>", "<sil>", "[NOISE]", "+BREATH+": markers, not words.
_NON_WORD = re.compile(r"^(<.*>|\[.*\]|\+.*\+)$")
_ALT_PRONUNCIATION = re.compile(r"\(\d+\)$")
_ENGLISH = {"en", "en-us", "en_us", "eng", "english"}


class PocketSphinx:
    """PocketSphinx decoder; one instance decodes one piece at a time."""

    def __init__(self) -> None:
        try:
            from pocketsphinx import Config, Decoder
        except ImportError as e:
            raise missing_package("ASR backend 'pocketsphinx'", "pocketsphinx") from e
        config = Config(loglevel="FATAL")
        self._frame_rate = int(config["frate"])
        self._decoder: Any = Decoder(config)

    def transcribe(
        self, samples: NDArray[np.float32], *, sample_rate: int, language: str | None
    ) -> list[Segment]:
        """Decode ``samples`` (16 kHz mono) into phrase segments with word timings."""
        if language is not None and language.lower() not in _ENGLISH:
            raise PerceptionError(
                f"ASR backend 'pocketsphinx' only has an English model (asked for '{language}'); "
                "use --asr whisper or --asr openai for other languages"
            )
        if sample_rate != 16_000:
            raise ValueError(f"pocketsphinx needs 16 kHz audio (got {sample_rate} Hz)")
        pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        dec = self._decoder
        dec.start_utt()
        dec.process_raw(pcm, full_utt=True)
        dec.end_utt()
        if dec.hyp() is None:
            return []
        words: list[Word] = []
        for seg in dec.seg():
            if _NON_WORD.match(seg.word):
                continue
            words.append(
                Word(
                    text=_ALT_PRONUNCIATION.sub("", seg.word),
                    start=seg.start_frame / self._frame_rate,
                    end=(seg.end_frame + 1) / self._frame_rate,
                    confidence=min(1.0, max(0.0, float(seg.prob))),
                )
            )
        return _group(words)


def _group(words: list[Word]) -> list[Segment]:
    groups: list[list[Word]] = []
    for w in words:
        if (
            groups
            and w.start - groups[-1][-1].end < _SEGMENT_GAP
            and w.end - groups[-1][0].start <= _MAX_SEGMENT
        ):
            groups[-1].append(w)
        else:
            groups.append([w])
    return [
        Segment(
            start=g[0].start,
            end=g[-1].end,
            text=" ".join(w.text for w in g),
            confidence=float(np.mean([w.confidence or 0.0 for w in g])),
            words=g,
        )
        for g in groups
    ]
