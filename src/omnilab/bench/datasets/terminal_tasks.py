"""``terminal-tasks``: five small TerminalBench-O-style processing tasks (Code-X §4, App. F).

Each task gives media made on the spot (:mod:`omnilab.media.synth`,
:mod:`omnilab.perception.samples`) and asks for files under ``output/``: cut a clip at detected
shot boundaries, subtitle slides as SRT, catalogue slide images into JSON with a closed
vocabulary, make a contact sheet, find a tone's start among decoys. The specs and hidden
references (:class:`~omnilab.bench.scoring.code_x_tasks.TaskSpec`) live in each record's
``spec`` field, never in the workspace; ``--scorer terminal-tasks`` grades the workspace.

Like ``offline-suite``, ``omnilab eval terminal-tasks`` builds the tasks in the cache on first
use (``--data FOLDER`` builds them there).
"""

from __future__ import annotations

import json
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from omnilab.bench.datasets._common import DatasetLoad
from omnilab.bench.datasets.jsonl import ADAPTER as JSONL_ADAPTER
from omnilab.bench.run_dir import write_atomic
from omnilab.bench.scoring.code_x_spec import Dimension, Gate, TaskSpec
from omnilab.config import get_settings
from omnilab.media import synth
from omnilab.perception.samples import Slide, make_talk

__all__ = ["ADAPTER", "SUITE_VERSION", "TerminalTasksAdapter", "build_tasks", "task_specs"]

SUITE_VERSION = 1
SUITE_FILE = "terminal_tasks.jsonl"
DONE = "When every output file is written, reply <answer>done</answer> and call task_complete."

_SHOTS = [("red", 2.0, (200, 30, 30)), ("green", 3.0, (30, 170, 60)), ("blue", 2.5, (30, 40, 200))]
_SRT = [("WELCOME", 2.0), ("PLAN AHEAD", 2.5), ("THANK YOU", 2.0)]
_CATALOG = [
    ("slide1.png", "Quarterly Results", "results"),
    ("slide2.png", "Agenda", "agenda"),
    ("slide3.png", "Summary and Next Steps", "summary"),
]
_SHEET_TIMES = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
_TONE_START, _TONE_HZ = 2.35, 660.0


def _schema(
    required: dict[str, str], items: str | None = None, item_props: dict[str, str] | None = None
) -> dict[str, Any]:
    props: dict[str, Any] = {k: {"type": v} for k, v in required.items()}
    if items is not None:
        props[items] = {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": list(item_props or {}),
                "properties": {k: {"type": v} for k, v in (item_props or {}).items()},
            },
        }
    return {"type": "object", "required": list(props), "properties": props}


def _specs() -> dict[str, TaskSpec]:
    bounds, t = [], 0.0
    for _name, seconds, _rgb in _SHOTS:
        bounds.append((t, t + seconds))
        t += seconds
    cues, t = [], 0.0
    for text, seconds in _SRT:
        cues.append({"start": t, "end": t + seconds, "text": text})
        t += seconds
    return {
        "shot-cuts": TaskSpec(
            instruction=(
                "inputs/lecture.mp4 is a video made of several shots (a shot is what lies between "
                "two cuts). Write output/shots.json as {\"shots\": [{\"id\": \"shot1\", \"start\": "
                "SECONDS, \"end\": SECONDS}, ...]} listing every shot in time order, and cut the "
                "second shot out as output/shot2.mp4."
            ),
            outputs=["output/shots.json", "output/shot2.mp4"],
            dimensions=[
                Dimension(name="shot boundaries", weight=0.6, kind="segments", file="output/shots.json", field="shots", tolerance=0.3, reference=bounds),
                Dimension(name="second shot clip", weight=0.4, kind="check", check="clip_duration", file="output/shot2.mp4", tolerance=0.3, reference=_SHOTS[1][1]),
            ],
            gates=[
                Gate(kind="json_schema", file="output/shots.json", schema=_schema({}, "shots", {"id": "string", "start": "number", "end": "number"})),
                Gate(kind="exists", file="output/shot2.mp4"),
            ],
        ),
        "slides-srt": TaskSpec(
            instruction=(
                "inputs/talk.mp4 shows slides with text. Subtitle it: write output/slides.srt, a "
                "SubRip file with one cue per slide, timed from when the slide appears to when it "
                "goes, whose text is the slide's text."
            ),
            outputs=["output/slides.srt"],
            dimensions=[
                Dimension(name="cue timing", weight=0.5, kind="check", check="srt_timing", file="output/slides.srt", tolerance=0.3, reference=cues),
                Dimension(name="cue text", weight=0.5, kind="check", check="srt_text", file="output/slides.srt", reference=cues),
            ],
            gates=[Gate(kind="exists", file="output/slides.srt")],
        ),
        "slide-catalog": TaskSpec(
            instruction=(
                "inputs/slide1.png, inputs/slide2.png and inputs/slide3.png are presentation "
                "slides; inputs/manifest.json lists them. Write output/catalog.json as "
                "{\"slides\": [{\"file\": NAME, \"title\": TITLE, \"category\": CATEGORY}, ...]} "
                "with each slide's title exactly as shown and a category taken from "
                "inputs/categories.txt (one per line, nothing else allowed)."
            ),
            outputs=["output/catalog.json"],
            dimensions=[
                Dimension(name="titles", weight=0.5, kind="labels", file="output/catalog.json", field="slides", key="file", value="title", reference={f: t for f, t, _ in _CATALOG}),
                Dimension(name="categories", weight=0.3, kind="labels", file="output/catalog.json", field="slides", key="file", value="category", reference={f: c for f, _, c in _CATALOG}),
                Dimension(name="coverage", weight=0.2, kind="set", file="output/catalog.json", field="slides", key="file", reference=[f for f, _, _ in _CATALOG]),
            ],
            gates=[
                Gate(kind="json_schema", file="output/catalog.json", schema=_schema({}, "slides", {"file": "string", "title": "string", "category": "string"})),
                Gate(kind="vocabulary", file="output/catalog.json", field="slides", item_field="category", vocabulary=sorted({c for _, _, c in _CATALOG})),
                Gate(kind="ids_match", file="output/catalog.json", field="slides", item_field="file", other_file="inputs/manifest.json", other_field="slides", other_item_field="file"),
            ],
        ),
        "contact-sheet": TaskSpec(
            instruction=(
                "Make a contact sheet of inputs/clip.mp4: the frames at 0.5 s, 1.5 s, 2.5 s, "
                "3.5 s, 4.5 s and 5.5 s, each scaled to 160x120, tiled 3 per row in time order "
                "with no borders, as output/sheet.png (480x240); and list the tiles in "
                "output/sheet.json as {\"tiles\": [{\"index\": 0, \"time\": 0.5}, ...]}."
            ),
            outputs=["output/sheet.png", "output/sheet.json"],
            dimensions=[
                Dimension(name="tiles show the right frames", weight=0.7, kind="check", check="sheet_frames", file="output/sheet.png", reference=_SHEET_TIMES),
                Dimension(name="tile times", weight=0.3, kind="check", check="sheet_times", file="output/sheet.json", reference=_SHEET_TIMES),
            ],
            gates=[
                Gate(kind="exists", file="output/sheet.png"),
                Gate(kind="json_schema", file="output/sheet.json", schema=_schema({}, "tiles", {"index": "integer", "time": "number"})),
            ],
        ),
        "tone-onset": TaskSpec(
            instruction=(
                "inputs/signal.wav holds a steady tone somewhere after silence and a short click. "
                "Find when the tone starts and its frequency; write output/onset.json as "
                "{\"tone_start\": SECONDS, \"frequency_hz\": HZ}."
            ),
            outputs=["output/onset.json"],
            dimensions=[
                Dimension(name="tone start", weight=0.6, kind="number", file="output/onset.json", field="tone_start", tolerance=0.05, reference=_TONE_START),
                Dimension(name="frequency", weight=0.4, kind="number", file="output/onset.json", field="frequency_hz", tolerance=10.0, reference=_TONE_HZ),
            ],
            gates=[Gate(kind="json_schema", file="output/onset.json", schema=_schema({"tone_start": "number", "frequency_hz": "number"}))],
        ),
    }  # fmt: skip


def task_specs() -> dict[str, TaskSpec]:
    """The five tasks' specs by id (with their hidden references)."""
    return _specs()


# -- media ---------------------------------------------------------------------------------------


def _write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def _signal(path: Path) -> None:
    rate = 16000
    x = np.zeros(4 * rate)
    click = int(0.8 * rate)
    x[click : click + rate // 50] = 0.8 * np.sign(np.sin(np.arange(rate // 50)))
    start, end = int(_TONE_START * rate), int(3.6 * rate)
    x[start:end] = 0.4 * np.sin(2 * np.pi * _TONE_HZ * np.arange(end - start) / rate)
    _write_wav(path, x, rate)


def _slide_png(path: Path, title: str) -> None:
    from omnilab.perception.samples import render_slide

    Image.fromarray(render_slide(Slide(title, 1.0), (480, 270))).save(path)


_MEDIA: dict[str, list[tuple[str, Callable[[Path], object]]]] = {
    "shot-cuts": [("lecture.mp4", lambda p: make_talk(p, [Slide(n.upper(), s, background=c) for n, s, c in _SHOTS], size=(320, 180)))],
    "slides-srt": [("talk.mp4", lambda p: make_talk(p, [Slide(t, s, background=(20 + 60 * i, 40, 90)) for i, (t, s) in enumerate(_SRT)], size=(480, 270)))],
    "slide-catalog": [
        *[(f, lambda p, t=t: _slide_png(p, t)) for f, t, _ in _CATALOG],
        ("categories.txt", lambda p: p.write_text("\n".join(sorted({c for _, _, c in _CATALOG})) + "\n")),
        ("manifest.json", lambda p: p.write_text(json.dumps({"slides": [{"file": f} for f, _, _ in _CATALOG]}))),
    ],
    "contact-sheet": [("clip.mp4", lambda p: synth.make_video(p, duration=6.0, size=(320, 240)))],
    "tone-onset": [("signal.wav", _signal)],
}  # fmt: skip


def build_tasks(folder: Path) -> Path:
    """Make the tasks' media and ``terminal_tasks.jsonl`` in ``folder`` (skipped when current)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / SUITE_FILE
    stamp = folder / ".version"
    if out.is_file() and stamp.is_file() and stamp.read_text().strip() == str(SUITE_VERSION):
        return out
    lines = []
    for task_id, spec in _specs().items():
        files = []
        for name, make in _MEDIA[task_id]:
            (folder / task_id).mkdir(exist_ok=True)
            make(folder / task_id / name)
            files.append(f"{task_id}/{name}")
        record = {
            "id": task_id,
            "question": f"{spec.instruction}\n\n{DONE}",
            "files": files,
            "answers": ["done"],
            "task_type": "processing",
            "spec": spec.model_dump(mode="json", by_alias=True),
        }
        lines.append(json.dumps(record))
    write_atomic(out, "\n".join(lines) + "\n")
    write_atomic(stamp, str(SUITE_VERSION))
    return out


class TerminalTasksAdapter:
    """``terminal-tasks``: ``--data`` names a folder to build the tasks in, or their JSONL file;
    without ``--data`` they live in the cache."""

    name = "terminal-tasks"
    description = (
        "five TerminalBench-O-style processing tasks on generated media (built on first use)"
    )

    def prepare(self, path: Path | None) -> Path:
        if path is not None and path.suffix == ".jsonl":
            return path
        default = get_settings().cache_dir / "terminal-tasks" / f"v{SUITE_VERSION}"
        return build_tasks(path if path is not None else default)

    def load(self, path: Path, *, media_root: Path | None = None) -> DatasetLoad:
        data = self.prepare(path)
        loaded = JSONL_ADAPTER.load(data, media_root=media_root or data.parent)
        loaded.tasks = [t.model_copy(update={"dataset": self.name}) for t in loaded.tasks]
        return loaded.model_copy(update={"dataset": self.name})


ADAPTER = TerminalTasksAdapter()
