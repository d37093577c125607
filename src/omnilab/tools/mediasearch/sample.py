"""A small offline Omni-DeepSearch sample: audio clips, a local text corpus, image and video
indexes and questions with answers, made on the spot so that ``omnilab eval omni-deepsearch
--agent deepsearch`` runs end to end on a fresh machine with no download.

``make_sample(out, speech=...)`` writes::

    out/tasks.jsonl                the omni-deepsearch items (question, answer, audio, modality, type)
    out/audio/*.wav                the clips: the speech sample when given, synthesised tones/noise
    out/corpus/*.md, images/, videos/   what is searched (images and videos with sidecars)
    out/index/{text,image,video}   the local indexes (``-O index_dir=out/index``)

The facts about Cape Lumen, Port Ardent and its orchestra are made up for this sample (so no
model knows them without searching); the Dickens facts are real. ``python
bench/deepsearch_sample.py OUT`` (in the repository) passes the shipped speech sample and writes
all five tasks; :func:`sample_folder`, what ``omnilab eval omni-deepsearch`` without ``--data``
and the ``local`` provider without indexes use, is built once in the cache without speech (no
speech ships in the package), so it holds the three tasks that need none.
"""

from __future__ import annotations

import json
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np

from omnilab.config import get_settings

__all__ = ["SAMPLE_VERSION", "make_sample", "sample_folder"]

SAMPLE_VERSION = 1
_RATE = 16_000

CORPUS = {
    "a-tale-of-two-cities": (
        "A Tale of Two Cities",
        "A Tale of Two Cities is an 1859 historical novel by Charles Dickens, set in London and "
        "Paris. It opens with the words: It was the best of times, it was the worst of times, "
        "it was the age of wisdom, it was the age of foolishness.",
    ),
    "charles-dickens": (
        "Charles Dickens",
        "Charles Dickens (1812-1870) was an English novelist. Dickens was born in Portsmouth, "
        "in the district of Landport, and grew up in Chatham and London.",
    ),
    "harbour-orchestra": (
        "Harbour Orchestra of Port Ardent",
        "The Harbour Orchestra of Port Ardent tunes to a single sustained A at 440 Hz, played "
        "on the oboe before every concert. Its home is the Lantern Hall on the quay. In 1922 "
        "the orchestra premiered its Two Cities Suite, based on the novel A Tale of Two Cities.",
    ),
    "cape-lumen": (
        "Cape Lumen",
        "Cape Lumen is a windy headland north of Port Ardent, known for its loud surf and its "
        "lighthouse. A video tour of the lighthouse shows the sign with the year it was first lit.",
    ),
    "cuckoo": (
        "Common cuckoo",
        "The common cuckoo is named after the male's call: two notes, a falling third, "
        "repeated (cuc-koo). The cuckoo appears on the crest of the village of Port Ardent.",
    ),
}
IMAGES = {
    "lantern_hall": (
        "Lantern Hall, Port Ardent",
        "The Lantern Hall concert hall with its green copper roof",
    ),
    "port_ardent_crest": (
        "Port Ardent crest",
        "The crest of Port Ardent: a cuckoo holding a golden key",
    ),
    "quay_at_dusk": ("Port Ardent quay at dusk", "Fishing boats on the quay of Port Ardent"),
}
# (id, question, answers, clips, retrieval modality, audio type)
TASKS: list[tuple[str, str, list[str], list[str], str, str | None]] = [
    (
        "ds-speech-text",
        "The recording is a reading of the opening of a novel. In which city was the novel's "
        "author born?",
        ["Portsmouth", "Landport"],
        ["speech"],
        "single",
        "speech",
    ),
    (
        "ds-music-image",
        "The clip is the tuning note the Harbour Orchestra of Port Ardent plays before each "
        "concert. What colour is the roof of the orchestra's concert hall?",
        ["green"],
        ["tuning_a"],
        "image",
        "music",
    ),
    (
        "ds-animal-image",
        "The clip imitates the call of a bird that is named after its call. The crest of Port "
        "Ardent shows this bird; what does the bird hold on the crest?",
        ["a golden key", "golden key", "key"],
        ["cuckoo_call"],
        "image",
        "animal",
    ),
    (
        "ds-ambient-video",
        "The clip is the surf at Cape Lumen. In the video tour of the lighthouse on that "
        "headland, which year is shown as the year the lighthouse was first lit?",
        ["1881"],
        ["surf"],
        "video",
        "ambient",
    ),
    (
        "ds-multi-text",
        "The first clip is the opening of a novel; the second is the tuning note of an "
        "orchestra. In which year did that orchestra premiere a suite based on that novel?",
        ["1922"],
        ["speech", "tuning_a"],
        "multi",
        None,
    ),
]


def _write_wav(path: Path, samples: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(_RATE)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def _tone(freqs: list[tuple[float, float]]) -> np.ndarray:
    """Concatenated sine notes ``(hz, seconds)`` with short fades (0 Hz is a rest)."""
    parts = []
    for hz, seconds in freqs:
        t = np.arange(int(seconds * _RATE)) / _RATE
        note = 0.4 * np.sin(2 * np.pi * hz * t) if hz else np.zeros_like(t)
        fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.02)
        parts.append(note * fade)
    return np.concatenate(parts)


def _clips(folder: Path, speech: Path | None) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.15, 4 * _RATE)
    surf = noise * (0.6 + 0.4 * np.sin(2 * np.pi * 0.25 * np.arange(noise.size) / _RATE))
    made: dict[str, Callable[[], np.ndarray]] = {
        "tuning_a": lambda: _tone([(440.0, 3.0)]),
        "cuckoo_call": lambda: _tone([(660.0, 0.3), (0, 0.1), (528.0, 0.45), (0, 0.5)] * 3),
        "surf": lambda: surf,
    }
    clips = {name: _write_wav(folder / f"{name}.wav", make()) for name, make in made.items()}
    if speech is not None:
        target = folder / "speech.wav"
        target.write_bytes(speech.read_bytes())
        clips["speech"] = target
    return clips


def _media(out: Path) -> tuple[Path, Path, Path]:
    from omnilab.media.synth import make_image
    from omnilab.perception.samples import Slide, make_talk

    corpus, images, videos = out / "corpus", out / "images", out / "videos"
    for folder in (corpus, images, videos):
        folder.mkdir(parents=True, exist_ok=True)
    for doc_id, (title, text) in CORPUS.items():
        (corpus / f"{doc_id}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    for number, (name, (title, caption)) in enumerate(IMAGES.items(), start=1):
        make_image(images / f"{name}.png", size=(320, 240), index=number)
        side = {"title": title, "caption": caption}
        (images / f"{name}.json").write_text(json.dumps(side), encoding="utf-8")
    slides = [
        Slide("CAPE LUMEN LIGHTHOUSE", 3.0),
        Slide("FIRST LIT IN 1881", 3.0, background=(130, 30, 30)),
    ]
    make_talk(videos / "cape_lumen_tour.mp4", slides, size=(640, 360), fps=5)
    side = {
        "title": "Cape Lumen lighthouse tour",
        "description": "A short video tour of the lighthouse on Cape Lumen",
    }
    (videos / "cape_lumen_tour.json").write_text(json.dumps(side), encoding="utf-8")
    return corpus, images, videos


def make_sample(out: Path, *, speech: Path | None = None, digest: bool = True) -> Path:
    """Write the sample into ``out`` (see the module docstring); returns ``out/tasks.jsonl``.

    Without ``speech`` (a WAV of someone reading the opening of *A Tale of Two Cities*, as the
    repository's ``tests/data/speech/two_cities_part1.wav``) the tasks that need it are left
    out. ``digest=False`` indexes the video by its sidecar only (faster; its answer is on
    screen, so that task then cannot be found).
    """
    from omnilab.tools.mediasearch import build_media_index
    from omnilab.tools.web.index import build_index

    out.mkdir(parents=True, exist_ok=True)
    clips = _clips(out / "audio", speech)
    corpus, images, videos = _media(out)
    index = out / "index"
    build_index(corpus, index / "text")
    build_media_index("image", images, index / "image", ocr=False)
    build_media_index("video", videos, index / "video", digest=digest)
    lines = []
    for task_id, question, answers, names, modality, kind in TASKS:
        if any(n not in clips for n in names):
            continue
        record: dict[str, object] = {
            "id": task_id,
            "question": question,
            "answer": answers,
            "audio": [clips[n].relative_to(out).as_posix() for n in names],
            "retrieval_modality": modality,
        }
        if kind is not None:
            record["audio_type"] = kind
        lines.append(json.dumps(record))
    data = out / "tasks.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "sample.json").write_text(json.dumps({"version": SAMPLE_VERSION}), encoding="utf-8")
    return data


def sample_folder() -> Path:
    """The sample built without speech under ``cache_dir/mediasearch``, on the first call (a
    file lock keeps concurrent first calls from building it twice)."""
    from filelock import FileLock

    out = get_settings().cache_dir / "mediasearch" / f"sample-v{SAMPLE_VERSION}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        if not (out / "sample.json").is_file():
            make_sample(out)
    return out
