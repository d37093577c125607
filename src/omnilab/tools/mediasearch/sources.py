"""What the local image and video indexes read about each file: sidecars, EXIF, file names,
on-image text (OCR) and, for videos, digest transcripts and on-screen text with times.

A sidecar sits beside the media file with the same stem: ``photo.txt`` (its text is the
caption), ``photo.md``, or ``photo.json`` with any of ``title``, ``caption``, ``alt``,
``description``, ``tags`` (a list or a string) and ``url``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from omnilab.tools.web.errors import WebError, WebErrorCode

__all__ = [
    "IMAGE_SUFFIXES",
    "VIDEO_SUFFIXES",
    "Passage",
    "Sidecar",
    "exif_text",
    "media_files",
    "name_words",
    "read_sidecar",
    "video_passages",
]

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff"})
VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v"})
# A transcript is cut into passages of about this many seconds, so a hit points at a moment.
PASSAGE_SECONDS = 30.0
_EXIF_TAGS = {
    0x010E: "description",
    0x013B: "artist",
    0x010F: "camera make",
    0x0110: "camera model",
    0x0132: "date",
    0x8298: "copyright",
}
_WORDS = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class Sidecar:
    """What a sidecar file says about a media file."""

    title: str | None = None
    text: str = ""
    url: str | None = None


@dataclass(frozen=True)
class Passage:
    """A stretch of a video with the text heard or read in it."""

    start: float
    end: float
    text: str


@dataclass
class _Window:
    start: float
    end: float
    lines: list[str] = field(default_factory=list)


def media_files(source: Path, suffixes: frozenset[str]) -> list[Path]:
    """The media files under ``source`` (a folder, searched recursively, or one file), sorted;
    hidden files are skipped. ``BAD_CORPUS`` when there are none."""
    if source.is_file():
        found = [source] if source.suffix.lower() in suffixes else []
    elif source.is_dir():
        found = sorted(
            p
            for p in source.rglob("*")
            if p.is_file()
            and p.suffix.lower() in suffixes
            and not any(part.startswith(".") for part in p.relative_to(source).parts)
        )
    else:
        raise WebError(WebErrorCode.BAD_CORPUS, f"{source} does not exist")
    if not found:
        kinds = " ".join(sorted(suffixes))
        raise WebError(WebErrorCode.BAD_CORPUS, f"no media files ({kinds}) in {source}")
    return found


def name_words(path: Path) -> str:
    """The file name as words: ``eiffel_tower-night.jpg`` -> ``eiffel tower night``."""
    return " ".join(_WORDS.findall(path.stem))


def read_sidecar(path: Path) -> Sidecar:
    """The sidecar of ``path`` (``.json``, else ``.txt``/``.md``); empty when there is none.

    A JSON sidecar that does not parse is a ``BAD_CORPUS`` error naming it.
    """
    js = path.with_suffix(".json")
    if js.is_file():
        try:
            data = json.loads(js.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise WebError(WebErrorCode.BAD_CORPUS, f"{js} is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise WebError(WebErrorCode.BAD_CORPUS, f"{js} must hold a JSON object")
        tags = data.get("tags")
        tag_text = " ".join(map(str, tags)) if isinstance(tags, list) else str(tags or "")
        parts = [str(data.get(k) or "") for k in ("caption", "alt", "description")]
        text = " ".join(p for p in [*parts, tag_text] if p.strip())
        title = data.get("title")
        url = data.get("url")
        return Sidecar(str(title) if title else None, text, str(url) if url else None)
    for suffix in (".txt", ".md"):
        side = path.with_suffix(suffix)
        if side.is_file():
            return Sidecar(text=side.read_text(encoding="utf-8", errors="replace").strip())
    return Sidecar()


def exif_text(path: Path) -> str:
    """Descriptive EXIF fields of an image (description, artist, camera, date), as one line."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            exif = image.getexif()
    except (OSError, UnidentifiedImageError):
        return ""
    values = []
    for tag, label in _EXIF_TAGS.items():
        value = exif.get(tag)
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if value and str(value).strip():
            values.append(f"{label}: {str(value).strip()}")
    return "; ".join(values)


def _windows(items: list[tuple[float, float, str]], seconds: float) -> Iterator[_Window]:
    current: _Window | None = None
    for start, end, text in sorted(items):
        if current is not None and start - current.start >= seconds:
            yield current
            current = None
        if current is None:
            current = _Window(start, end)
        current.end = max(current.end, end)
        current.lines.append(text)
    if current is not None:
        yield current


def video_passages(
    path: Path, *, digest: bool, seconds: float = PASSAGE_SECONDS
) -> tuple[list[Passage], list[str]]:
    """Timed passages (about ``seconds`` long) of what is said (transcript) and shown
    (on-screen text) in a video, and notes on what could not be read. Without ``digest`` there
    are none."""
    if not digest:
        return [], []
    from omnilab.errors import OmnilabError
    from omnilab.perception.digest import DigestOptions
    from omnilab.perception.digest import digest as run_digest

    options = DigestOptions(sheet=False, events=False)
    try:
        evidence = run_digest([path], options=options).files[0]
    except OmnilabError as e:
        return [], [f"{path.name}: {e}"]
    items: list[tuple[float, float, str]] = []
    if evidence.transcript is not None:
        items += [(s.start, s.end, s.text.strip()) for s in evidence.transcript.segments]
    for line in evidence.screen_text or []:
        for t in line.times[:1] or [0.0]:
            items.append((t, t, f"[on screen] {line.text}"))
    passages = [
        Passage(round(w.start, 2), round(w.end, 2), " ".join(x for x in w.lines if x))
        for w in _windows([i for i in items if i[2]], seconds)
    ]
    return passages, list(evidence.notes)
