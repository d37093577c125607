"""The offline suite: small media tasks that the embedded defaults should be able to answer.

Every task is made on the spot with the project's own synthesis (:mod:`omnilab.perception.samples`,
:mod:`omnilab.media.synth`), so the suite needs no download and its answers are known exactly.
The questions exercise what a text-only model sees in ``evidence`` mode (on-screen text, shots,
audio events) plus one step of reasoning. It is a smoke test of the embedded setup, not a
benchmark of model quality: see docs/performance.md for what the embedded models score on it.

``build_suite(folder)`` writes the media and ``offline_suite.jsonl`` (the generic ``jsonl``
format) into ``folder``; ``omnilab eval offline-suite`` builds it into the cache on first use.
Not covered (no speech synthesis ships in a wheel here): spoken words and numbers.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from omnilab.bench.datasets._common import DatasetLoad
from omnilab.bench.datasets.jsonl import ADAPTER as JSONL_ADAPTER
from omnilab.bench.run_dir import write_atomic
from omnilab.config import get_settings
from omnilab.media import synth
from omnilab.perception.samples import Slide, make_talk

__all__ = [
    "ADAPTER",
    "SUITE_FILE",
    "SUITE_VERSION",
    "OfflineSuiteAdapter",
    "SuiteItem",
    "build_suite",
    "default_folder",
    "suite_items",
]

SUITE_VERSION = 3
"""Bumped whenever a task, its media or its answers change (the cached copy is rebuilt)."""
SUITE_FILE = "offline_suite.jsonl"

_NUMBER_WORDS = {
    2: "two",
    3: "three",
    4: "four",
    5: "five",
}
# Distinct backgrounds so every slide is its own shot.
_COLOURS = [(20, 40, 90), (130, 30, 30), (10, 100, 40), (90, 60, 10), (60, 20, 90)]


@dataclass(frozen=True)
class SuiteItem:
    """One task: its question, answers (label first), family and how to make its one file."""

    id: str
    family: str
    question: str
    answers: list[str]
    file: str
    make: Callable[[Path], object] = field(repr=False, compare=False)
    wrong: tuple[str, ...] = ()
    """Choices the question offers that are wrong: a reply naming one of them is wrong."""


def _talk(texts: list[str], seconds: float = 2.5) -> Callable[[Path], object]:
    slides = [
        Slide(text, seconds, background=_COLOURS[i % len(_COLOURS)]) for i, text in enumerate(texts)
    ]
    return lambda path: make_talk(path, slides)


def _image(text: str) -> Callable[[Path], object]:
    return lambda path: synth.make_image(path, text=text, size=(480, 270))


def _tone_then_silence(tone_first: bool) -> Callable[[Path], object]:
    def make(path: Path) -> object:
        rate, half = 16_000, 16_000 * 3
        t = np.arange(half) / rate
        tone = (0.4 * np.sin(2 * np.pi * 660.0 * t)).astype(np.float32)
        silence = np.zeros(half, dtype=np.float32)
        track = np.concatenate([tone, silence] if tone_first else [silence, tone])
        return _write_wav(path, track, rate)

    return make


def _write_wav(path: Path, samples: np.ndarray, rate: int) -> Path:
    import wave  # only the audio items need it

    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def _items() -> Iterator[SuiteItem]:
    for i, word in enumerate(["SUNFLOWER", "HARBOR", "VELVET", "COMPASS"], 1):
        yield SuiteItem(
            f"screen-word-{i}",
            "screen word",
            "What word is shown on screen in the video?",
            [word.lower()],
            f"screen_word_{i}.mp4",
            _talk([word], seconds=4.0),
        )
    for i, number in enumerate([47, 312, 8, 95], 1):
        yield SuiteItem(
            f"screen-number-{i}",
            "screen number",
            "What number is shown on screen in the video?",
            [str(number)],
            f"screen_number_{i}.mp4",
            _talk([str(number)], seconds=4.0),
        )
    for i, texts in enumerate([["RED", "BLUE"], ["ONE", "TWO", "THREE"], ["A", "B", "C", "D"]], 1):
        n = len(texts)
        yield SuiteItem(
            f"slide-count-{i}",
            "slide count",
            "How many different slides does the video show one after another?",
            [str(n), _NUMBER_WORDS[n]],
            f"slide_count_{i}.mp4",
            _talk([f"SLIDE {t}" for t in texts]),
        )
    for i, texts in enumerate(
        [["OPEN", "CLOSE"], ["MORNING", "NOON", "EVENING"], ["NORTH", "SOUTH"]], 1
    ):
        yield SuiteItem(
            f"last-slide-{i}",
            "last slide",
            "The video shows several slides in turn. What word is on the last slide?",
            [texts[-1].lower()],
            f"last_slide_{i}.mp4",
            _talk(texts),
        )
    for i, (a, b) in enumerate([(12, 30), (7, 5), (40, 25)], 1):
        yield SuiteItem(
            f"sum-{i}",
            "sum of numbers",
            "The video shows two numbers, one after the other. What is their sum?",
            [str(a + b)],
            f"sum_{i}.mp4",
            _talk([str(a), str(b)]),
        )
    for i, word in enumerate(["GARDEN", "PLANET", "BRIDGE", "CASTLE"], 1):
        yield SuiteItem(
            f"image-word-{i}",
            "image word",
            "What word is written in the image?",
            [word.lower()],
            f"image_word_{i}.png",
            _image(word),
        )
    for i, tone_first in enumerate([True, False, True], 1):
        first, second = ("sound", "silence") if tone_first else ("silence", "sound")
        yield SuiteItem(
            f"silence-{i}",
            "sound or silence",
            "The audio has two parts. Is its first part silence or a sound? Answer 'silence' "
            "or 'sound'.",
            [first, "a sound" if first == "sound" else "silent"],
            f"silence_{i}.wav",
            _tone_then_silence(tone_first),
            wrong=(second, "a sound" if second == "sound" else "silent"),
        )


def suite_items() -> list[SuiteItem]:
    """The tasks of the suite, in a fixed order.

    Files are named ``task_NN`` (version 2): the family in a file name ("screen_word_2.mp4")
    hinted at the question, and small models copied the name as their answer.
    """
    return [
        dataclasses.replace(item, file=f"task_{n:02d}{Path(item.file).suffix}")
        for n, item in enumerate(_items(), 1)
    ]


def build_suite(folder: Path) -> Path:
    """Make the suite's media and its JSONL file in ``folder`` (skipped when already current)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / SUITE_FILE
    stamp = folder / ".version"
    if out.is_file() and stamp.is_file() and stamp.read_text().strip() == str(SUITE_VERSION):
        return out
    lines = []
    for item in suite_items():
        item.make(folder / item.file)
        record: dict[str, object] = {
            "id": item.id,
            "question": item.question,
            "files": [item.file],
            "answers": item.answers,
            "category": item.family,
        }
        if item.wrong:
            record["metadata"] = {"wrong_answers": "|".join(item.wrong)}
        lines.append(json.dumps(record))
    write_atomic(out, "\n".join(lines) + "\n")
    write_atomic(stamp, str(SUITE_VERSION))
    return out


def default_folder() -> Path:
    """Where ``omnilab eval offline-suite`` builds the suite when no ``--data`` is given."""
    return get_settings().cache_dir / "offline-suite" / f"v{SUITE_VERSION}"


class OfflineSuiteAdapter:
    """``offline-suite``: ``--data`` names a folder to build the suite in (made if needed), or
    its ``offline_suite.jsonl``; without ``--data`` the suite lives in the cache."""

    name = "offline-suite"
    description = "generated offline media tasks for the embedded defaults (built on first use)"

    def prepare(self, path: Path | None) -> Path:
        """The suite's JSONL file: built in folder ``path`` (default: the cache) unless ``path``
        is the JSONL file itself."""
        if path is not None and path.suffix == ".jsonl":
            return path
        return build_suite(path if path is not None else default_folder())

    def load(self, path: Path, *, media_root: Path | None = None) -> DatasetLoad:
        """Build the suite if ``path`` is a folder, then read it as generic JSONL; the tasks
        are labelled ``offline-suite`` (leaderboards and metrics name the suite, not ``jsonl``)."""
        data = self.prepare(path)
        loaded = JSONL_ADAPTER.load(data, media_root=media_root or data.parent)
        tasks = [t.model_copy(update={"dataset": self.name}) for t in loaded.tasks]
        return loaded.model_copy(update={"dataset": self.name, "tasks": tasks})


ADAPTER = OfflineSuiteAdapter()
