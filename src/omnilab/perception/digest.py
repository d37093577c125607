"""``digest(files) -> Evidence``: the compact text evidence of media files, cached per part.

For each file: probe metadata; for audio (and the audio track of videos) a timed transcript and
audio events; for videos shots with keyframes, the text read on those keyframes (merged across
frames) and a contact sheet; for images the text in the image. Each part is cached in the media
cache under the file's content hash and the options that shape it, so a second digest of the same
file with the same options reads JSON and is nearly free, and changing one option (say the ASR
backend) recomputes only the part it affects. A part that cannot be made for this file (a video
without audio has no transcript) is recorded as a note and the rest goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, TypeAdapter

from omnilab.config import get_settings
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError
from omnilab.media.probe import MediaInfo, MediaKind, probe
from omnilab.media.sheet import contact_sheet
from omnilab.media.video import Frame, frames_at
from omnilab.perception._audio import load_samples
from omnilab.perception._cache import cached
from omnilab.perception.asr import backends as asr_backends
from omnilab.perception.asr import model_of, resolve_backend, transcribe
from omnilab.perception.events import audio_events
from omnilab.perception.evidence import Evidence, FileEvidence, ScreenText
from omnilab.perception.ocr import backends as ocr_backends
from omnilab.perception.ocr import ocr
from omnilab.perception.screen_text import merge_screen_text, read_frames
from omnilab.perception.shots import detect_shots
from omnilab.perception.types import AudioEvent, Shot, Transcript

__all__ = ["DigestOptions", "Progress", "digest", "keyframe_times"]

T = TypeVar("T")

Progress = Callable[[str, float, float], None]
"""Called with ``(label, done, total)``; label is ``"<file>: <part>"``, done/total in seconds."""

# A long shot (a talk, a screencast) gets one extra keyframe per this many seconds, so slides
# that change without a colour change are still read.
_KEYFRAME_SPACING = 30.0
_FRAME_EDGE = 1280
# A text file's content goes into the digest up to this many characters (a prompt, not a book).
TEXT_CHARS = 20_000
_SHEET_TILE = 320
_TRANSCRIPT = TypeAdapter(Transcript)
_EVENTS = TypeAdapter(list[AudioEvent])
_SHOTS = TypeAdapter(list[Shot])
_SCREEN_TEXT = TypeAdapter(list[ScreenText])


class DigestOptions(BaseModel):
    """Which parts a digest makes and with which backends (``None``: the configured default)."""

    model_config = ConfigDict(frozen=True)

    transcript: bool = True
    events: bool = True
    shots: bool = True
    ocr: bool = True
    sheet: bool = True
    asr_backend: str | None = None
    ocr_backend: str | None = None
    language: str | None = None


def digest(
    files: Sequence[str | Path],
    *,
    options: DigestOptions | None = None,
    on_progress: Progress | None = None,
) -> Evidence:
    """Digest each file into text evidence (see the module docstring for what each part holds).

    Raises:
        MediaError: A file does not exist or is not readable media.
        BackendUnavailableError: A chosen backend is not installed or lacks its model or key.
    """
    opts = options or DigestOptions()
    # Misspelt backend names fail before minutes of work on the first file, not after.
    if opts.transcript:
        asr_backends.check(opts.asr_backend)
    if opts.ocr:
        ocr_backends.check(opts.ocr_backend)
    return Evidence(files=[_digest_one(Path(f), opts, on_progress) for f in files])


def keyframe_times(shots: Sequence[Shot], *, limit: int) -> list[float]:
    """Times of the frames to read and show: each shot's keyframe, more for long shots.

    A shot longer than 30 s gets evenly spaced frames 30 s apart; past ``limit`` frames an even
    subset is kept (always including the first and last).
    """
    times: list[float] = []
    for shot in shots:
        n = max(1, int((shot.end - shot.start) // _KEYFRAME_SPACING))
        if n == 1:
            times.append(shot.keyframe)
        else:
            span = (shot.end - shot.start) / n
            times.extend(round(shot.start + (i + 0.5) * span, 3) for i in range(n))
    if len(times) > limit:
        picks = np.linspace(0, len(times) - 1, limit).round().astype(int)
        times = [times[i] for i in sorted(set(picks.tolist()))]
    return times


def _digest_one(path: Path, opts: DigestOptions, on_progress: Progress | None) -> FileEvidence:
    started = time.perf_counter()
    info = probe(path)
    parts = _Parts(info, opts, on_progress)
    fields: dict[str, object] = {}
    if info.kind is MediaKind.TEXT:
        fields["text"] = _read_text(info, parts.notes)
    elif info.kind is MediaKind.IMAGE:
        if opts.ocr:
            fields["screen_text"] = parts.image_text()
    else:
        if not info.has_audio and (opts.transcript or opts.events):
            # One line, not one error per audio part: small models read every repeated
            # mention of the file as a hint (the summary line already says "no audio").
            parts.notes.append("no audio track: no transcript or audio events")
        elif opts.transcript or opts.events:
            if opts.transcript:
                fields["transcript"] = parts.run("transcript", parts.transcript)
            if opts.events:
                fields["events"] = parts.run("events", parts.events)
        if info.has_video and (opts.shots or opts.ocr or opts.sheet):
            shots = parts.run("shots", parts.shots)
            if opts.shots:
                fields["shots"] = shots
            times = keyframe_times(shots or [], limit=get_settings().perception.max_keyframes)
            if opts.ocr and times:
                fields["screen_text"] = parts.run("on-screen text", lambda: parts.video_text(times))
            if opts.sheet and times:
                fields["sheet"] = parts.run("contact sheet", lambda: parts.sheet(times))
    return FileEvidence(
        path=info.path,
        info=info,
        notes=parts.notes,
        seconds=round(time.perf_counter() - started, 3),
        cached=parts.all_hits,
        **fields,
    )


def _read_text(info: MediaInfo, notes: list[str]) -> str:
    raw = info.path.read_text(encoding="utf-8", errors="replace")
    if len(raw) > TEXT_CHARS:
        notes.append(f"text: cut after {TEXT_CHARS} of {len(raw)} characters")
        raw = raw[:TEXT_CHARS]
    return raw


class _Parts:
    """The parts of one file's digest, sharing decoded audio and keyframes between them."""

    def __init__(self, info: MediaInfo, opts: DigestOptions, on_progress: Progress | None) -> None:
        self.info = info
        self.opts = opts
        self.on_progress = on_progress
        self.notes: list[str] = []
        self.all_hits = True
        self._samples: NDArray[np.float32] | None = None
        self._frames: dict[tuple[float, ...], list[Frame]] = {}

    def run(self, part: str, make: Callable[[], T]) -> T | None:
        """``make()``, or ``None`` with a note when this file cannot have the part."""
        try:
            return make()
        except MediaError as e:
            self.notes.append(f"{part}: {e.message}")
            return None

    def _progress(self, part: str) -> Callable[[float, float], None] | None:
        report = self.on_progress
        if report is None:
            return None
        label = f"{self.info.path.name}: {part}"
        return lambda done, total: report(label, done, total)

    def _cached(
        self, op: str, params: dict[str, object], kind: TypeAdapter[T], make: Callable[[], T]
    ) -> T:
        value, hit = cached(self.info.path, op, params, kind, make)
        self.all_hits = self.all_hits and hit
        return value

    def samples(self) -> NDArray[np.float32]:
        if self._samples is None:
            self._samples = load_samples(self.info.path)
        return self._samples

    def transcript(self) -> Transcript:
        s = get_settings().perception
        # The backend that will really run (pocketsphinx when the embedded whisper is missing).
        backend, _notice = resolve_backend(self.opts.asr_backend)
        language = self.opts.language or s.language
        params: dict[str, object] = {
            "backend": backend,
            "language": language,
            "chunk": s.asr_chunk_seconds,
            "vad": s.vad_threshold,
            "model": model_of(backend),
        }
        if not self.info.has_audio:
            load_samples(self.info.path)  # raises the NO_AUDIO_STREAM error this part notes
        return self._cached(
            "transcript",
            params,
            _TRANSCRIPT,
            lambda: transcribe(
                self.samples(),
                backend=self.opts.asr_backend,  # resolved the same way, notice included
                language=language,
                on_progress=self._progress("transcript"),
            ),
        )

    def events(self) -> list[AudioEvent]:
        s = get_settings().perception
        if not self.info.has_audio:
            load_samples(self.info.path)
        return self._cached(
            "events",
            {"backend": s.events_backend, "vad": s.vad_threshold},
            _EVENTS,
            lambda: audio_events(self.samples()),
        )

    def shots(self) -> list[Shot]:
        s = get_settings().perception
        params: dict[str, object] = {
            "threshold": s.shot_threshold,
            "fps": s.shot_sample_fps,
            "min": s.min_shot_seconds,
        }
        return self._cached(
            "shots",
            params,
            _SHOTS,
            lambda: detect_shots(self.info.path, on_progress=self._progress("shots")),
        )

    def _ocr_params(self, times: list[float]) -> dict[str, object]:
        s = get_settings().perception
        return {
            "backend": self.opts.ocr_backend or s.ocr_backend,
            "min": s.ocr_min_confidence,
            "times": times,
            "edge": _FRAME_EDGE,
        }

    def _keyframes(self, times: list[float]) -> list[Frame]:
        key = tuple(times)
        if key not in self._frames:
            self._frames[key] = list(frames_at(self.info.path, times, max_edge=_FRAME_EDGE))
        return self._frames[key]

    def video_text(self, times: list[float]) -> list[ScreenText]:
        def make() -> list[ScreenText]:
            frames = [(f.timestamp, f.image) for f in self._keyframes(times)]
            backend = self.opts.ocr_backend
            return merge_screen_text(read_frames(frames, lambda im: ocr(im, backend=backend)))

        return self._cached("screen_text", self._ocr_params(times), _SCREEN_TEXT, make)

    def image_text(self) -> list[ScreenText]:
        def make() -> list[ScreenText]:
            return merge_screen_text([(None, ocr(self.info.path, backend=self.opts.ocr_backend))])

        return self._cached("screen_text", self._ocr_params([]), _SCREEN_TEXT, make)

    def sheet(self, times: list[float]) -> Path:
        cache = MediaCache.default()
        key = cache.key(self.info.path, "perception.sheet", {"times": times, "tile": _SHEET_TILE})
        hit = cache.get(key, ".png")
        if hit is not None:
            return hit
        self.all_hits = False
        image = contact_sheet(self._keyframes(times), tile_edge=_SHEET_TILE)
        return cache.get_or_create(key, ".png", lambda tmp: image.save(tmp, format="PNG"))
