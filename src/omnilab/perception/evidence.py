"""What a digest produces: per-file evidence, as JSON and as compact Markdown for a prompt."""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from omnilab.media.probe import MediaInfo
from omnilab.media.sheet import format_timestamp
from omnilab.perception.types import AudioEvent, Shot, Transcript
from omnilab.plural import plural

__all__ = ["Evidence", "FileEvidence", "ScreenText"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ScreenText(_Frozen):
    """A line of on-screen text, merged across the keyframes it was read on."""

    text: str
    times: list[float] = Field(default_factory=list)
    """Keyframe timestamps where it was read (empty for a still image)."""
    confidence: float
    box: tuple[float, float, float, float]
    """Where it was first read: ``[left, top, right, bottom]`` in that frame's pixels."""


class FileEvidence(_Frozen):
    """Everything a digest found in one file; a part is ``None`` when skipped or impossible."""

    path: Path
    info: MediaInfo
    transcript: Transcript | None = None
    events: list[AudioEvent] | None = None
    shots: list[Shot] | None = None
    screen_text: list[ScreenText] | None = None
    sheet: Path | None = None
    """A contact sheet PNG of the keyframes (videos only)."""
    text: str | None = None
    """The content of a text file (``.txt``, ``.md``, ``.json``, ...), cut when very long."""
    notes: list[str] = Field(default_factory=list)
    """Why a part is missing, e.g. ``transcript: video.mp4 has no audio stream (video file)``."""
    seconds: float = 0.0
    """Wall time this digest took (small when every part came from the cache)."""
    cached: bool = False
    """Every part came from the cache."""


class Evidence(_Frozen):
    """The digest of several files."""

    files: list[FileEvidence] = Field(default_factory=list)

    def to_markdown(self) -> str:
        """Compact Markdown meant to be put in a prompt (times as ``MM:SS.s``)."""
        return "\n\n".join(_file_markdown(f) for f in self.files) + "\n"

    def save(self, out_dir: Path) -> Evidence:
        """Write ``digest.md``, ``digest.json`` and each contact sheet into ``out_dir``.

        Sheets are copied out of the cache as ``<file name>.sheet.png``; the returned evidence
        (also what the files hold) points at those copies.
        """
        out_dir.mkdir(parents=True, exist_ok=True)
        files = []
        for f in self.files:
            if f.sheet is not None:
                copy = out_dir / f"{f.path.name}.sheet.png"
                shutil.copyfile(f.sheet, copy)
                f = f.model_copy(update={"sheet": copy})
            files.append(f)
        saved = Evidence(files=files)
        (out_dir / "digest.md").write_text(saved.to_markdown(), encoding="utf-8")
        (out_dir / "digest.json").write_text(saved.model_dump_json(indent=2), encoding="utf-8")
        return saved


def _t(seconds: float) -> str:
    return format_timestamp(seconds)


def _span(start: float, end: float) -> str:
    return f"{_t(start)}-{_t(end)}"


def _file_markdown(f: FileEvidence) -> str:
    out = [f"## {f.path.name}", f.info.summary()]
    if f.transcript is not None:
        tr = f.transcript
        head = f"### Transcript ({tr.backend}, {plural(len(tr.segments), 'segment')})"
        lines = [
            f"[{_span(s.start, s.end)}]{f' {s.speaker}:' if s.speaker else ''} {s.text}"
            for s in tr.segments
        ]
        out += [head, "\n".join(lines) if lines else "(no speech)"]
        out += [f"Note: {n}" for n in tr.notes]
    if f.events is not None:
        spans = [f"{_span(e.start, e.end)} {e.label.value}" for e in f.events]
        out += ["### Audio events", "; ".join(spans) if spans else "(empty audio track)"]
    if f.shots is not None:
        rows = [
            f"{s.index + 1}. {_span(s.start, s.end)} (keyframe {_t(s.keyframe)})" for s in f.shots
        ]
        out += [f"### Shots ({len(f.shots)})", "\n".join(rows)]
    if f.screen_text is not None:
        rows = [
            f'- "{s.text}"' + (f" at {', '.join(_t(t) for t in s.times)}" if s.times else "")
            for s in f.screen_text
        ]
        out += ["### On-screen text", "\n".join(rows) if rows else "(none found)"]
    if f.sheet is not None:
        out.append(f"Contact sheet: {f.sheet}")
    if f.text is not None:
        out += ["### Text", f.text]
    if f.notes:
        out += ["### Notes", "\n".join(f"- {n}" for n in f.notes)]
    return "\n".join(out)
