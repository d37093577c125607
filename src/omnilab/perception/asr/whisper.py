"""ASR with faster-whisper (CTranslate2) on a model that is already on this machine.

``perception.whisper_model`` names a local CTranslate2 model folder (e.g. one converted with
``ct2-transformers-converter`` or copied from a Hugging Face snapshot) or a model name such as
``small.en`` that is already in the local Hugging Face cache. Nothing is ever downloaded: a
name that is not cached fails with a one-line error saying what to set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.perception.errors import BackendUnavailableError, missing_package
from omnilab.perception.types import Segment, Word

__all__ = ["FasterWhisper"]

_SETTING = "perception.whisper_model (env OMNILAB_PERCEPTION__WHISPER_MODEL)"


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "~", "/")) or Path(name).expanduser().exists()


class FasterWhisper:
    """A faster-whisper model loaded once from local files."""

    def __init__(self) -> None:
        s = get_settings().perception
        if not s.whisper_model:
            raise BackendUnavailableError(
                f"ASR backend 'whisper' needs a local model: set {_SETTING} to a CTranslate2 "
                "model folder or a model name already in the Hugging Face cache"
            )
        try:
            from faster_whisper import WhisperModel
        except ImportError as e:
            raise missing_package("ASR backend 'whisper'", "faster-whisper") from e
        name = s.whisper_model
        if _looks_like_path(name):
            folder = Path(name).expanduser()
            if not (folder / "model.bin").is_file():
                raise BackendUnavailableError(
                    f"whisper model folder {folder} has no model.bin (a CTranslate2 model is "
                    f"needed); fix {_SETTING}"
                )
            name = str(folder)
        try:
            self._model: Any = WhisperModel(
                name,
                device=s.whisper_device,
                compute_type=s.whisper_compute_type,
                cpu_threads=s.threads or 0,
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
                f"point {_SETTING} at a local CTranslate2 model folder"
            ) from e

    def transcribe(
        self, samples: NDArray[np.float32], *, sample_rate: int, language: str | None
    ) -> list[Segment]:
        """Transcribe one piece with word timestamps; the driver already removed silences."""
        if sample_rate != 16_000:
            raise ValueError(f"whisper needs 16 kHz audio (got {sample_rate} Hz)")
        pieces, _info = self._model.transcribe(
            samples,
            language=language,
            word_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        out: list[Segment] = []
        for p in pieces:
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
