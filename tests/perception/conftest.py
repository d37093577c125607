"""Perception fixtures: the speech sample in tests/data, tones, noise, silence and talk videos."""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from omnilab.media.audio import audio_samples
from omnilab.perception.samples import Slide, make_talk

SPEECH_DIR = Path(__file__).resolve().parents[1] / "data" / "speech"
RATE = 16_000

# The talk video: three slides; the speech sample starts SPEECH_AT seconds in.
SPEECH_AT = 1.5
SLIDES = [
    Slide("WELCOME TO OMNILAB", 3.0, background=(20, 40, 90)),
    Slide("Chapter Two\nThe Spring of Hope", 4.0, background=(130, 30, 30)),
    Slide("THE END", 3.0, background=(10, 100, 40), foreground=(255, 255, 0)),
]
CUTS = [3.0, 7.0]


def write_wav(path: Path, samples: NDArray[np.float32], rate: int = RATE) -> Path:
    """Write mono float samples as a 16-bit WAV."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


@pytest.fixture(scope="session")
def speech_wav() -> Path:
    path = SPEECH_DIR / "two_cities_part1.wav"
    assert path.is_file(), f"speech sample missing from tests/data: {path}"
    return path


@pytest.fixture(scope="session")
def speech_text() -> str:
    return (SPEECH_DIR / "two_cities_part1.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def speech(speech_wav: Path) -> NDArray[np.float32]:
    """The shared sample as 16 kHz mono floats (20.8 s)."""
    return audio_samples(speech_wav)


@pytest.fixture(scope="session")
def short_speech(perception_dir: Path, speech: NDArray[np.float32]) -> Path:
    """The first 5 s of the shared sample (keeps runs of the slower backends short)."""
    return write_wav(perception_dir / "short.wav", speech[: 5 * RATE])


@pytest.fixture(scope="session")
def tone() -> NDArray[np.float32]:
    """3 s of a 440 Hz tone with its octave: tonal, not speech."""
    t = np.arange(3 * RATE) / RATE
    return (0.3 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.sin(2 * np.pi * 880 * t)).astype(
        np.float32
    )


@pytest.fixture(scope="session")
def noise() -> NDArray[np.float32]:
    """3 s of white noise."""
    return (0.2 * np.random.default_rng(0).standard_normal(3 * RATE)).astype(np.float32)


@pytest.fixture(scope="session")
def perception_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("perception")


@pytest.fixture(scope="session")
def tone_wav(perception_dir: Path, tone: NDArray[np.float32]) -> Path:
    return write_wav(perception_dir / "tone.wav", tone)


@pytest.fixture(scope="session")
def silence_wav(perception_dir: Path) -> Path:
    return write_wav(perception_dir / "silence.wav", np.zeros(2 * RATE, dtype=np.float32))


@dataclass(frozen=True)
class Talk:
    """A generated talk video and what is known to be in it."""

    path: Path
    speech_at: float
    cuts: list[float]
    slides: list[Slide]


@pytest.fixture(scope="session")
def talk(perception_dir: Path, speech: NDArray[np.float32]) -> Talk:
    """10 s, three slides with on-screen text, the speech sample under it from SPEECH_AT."""
    path = make_talk(perception_dir / "talk.mp4", SLIDES, speech=speech, speech_at=SPEECH_AT)
    return Talk(path=path, speech_at=SPEECH_AT, cuts=CUTS, slides=SLIDES)


@pytest.fixture(scope="session")
def talk_video(talk: Talk) -> Path:
    return talk.path


@pytest.fixture(scope="session")
def mute_talk_video(perception_dir: Path) -> Path:
    """The same slides with no audio stream."""
    return make_talk(perception_dir / "mute.mp4", SLIDES)
