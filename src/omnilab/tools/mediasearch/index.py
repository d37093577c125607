"""Local image and video indexes: BM25 over what is known of each file, built once, searched
offline.

``build_media_index("image", folder, out)`` indexes every image under ``folder`` by its file
name, sidecar (caption, alt text, title, tags), EXIF description fields and, when an OCR backend
is installed, the text in the image. ``build_media_index("video", ...)`` indexes each video by
its file name and sidecar and, with ``digest=True``, by timed passages of its transcript and
on-screen text (``omnilab digest``), so a hit points at a time range. The folder holds::

    manifest.json     format, kind, version, source, counts, build id
    entries.jsonl     one record per indexed item (an image, or a passage of a video)
    bm25/             the bm25s index over the records' text
    thumbs/           a small JPEG per image, a poster frame per video passage

Thumbnails live in the index, so results can be shown to vision models even if the source
folder moves.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from omnilab.tools.mediasearch.sources import (
    IMAGE_SUFFIXES,
    PASSAGE_SECONDS,
    VIDEO_SUFFIXES,
    exif_text,
    media_files,
    name_words,
    read_sidecar,
    video_passages,
)
from omnilab.tools.mediasearch.types import MediaHit
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.index import _swap_in, make_snippet, tokenize

__all__ = ["MediaIndex", "MediaIndexManifest", "MediaKind", "build_media_index", "open_media_index"]

MediaKind = Literal["image", "video"]
MEDIA_INDEX_VERSION = 1
_THUMB_EDGE = 512
Progress = Callable[[int, int, str], None]
"""Called with ``(done, total, file name)`` after each file."""


class MediaIndexManifest(BaseModel):
    """What a media index folder holds."""

    format: Literal["omnilab-media-index"] = "omnilab-media-index"
    version: int = MEDIA_INDEX_VERSION
    kind: MediaKind
    source: str
    files: int
    entries: int
    notes: list[str] = []
    """What could not be read (no OCR backend, a video without a transcript)."""
    built_at: str
    build_id: str


def _ocr_text(path: Path, notes: list[str]) -> str:
    from omnilab.errors import OmnilabError
    from omnilab.perception.ocr import ocr

    try:
        return " ".join(box.text for box in ocr(path))
    except OmnilabError as e:
        note = f"ocr: {e}"
        if note not in notes:
            notes.append(note)
        return ""


def _thumb(image: Any, out: Path) -> str:
    picture = image.convert("RGB")
    picture.thumbnail((_THUMB_EDGE, _THUMB_EDGE))
    picture.save(out, quality=85)
    return out.name


def _image_records(
    path: Path, rel: str, thumbs: Path, notes: list[str], ocr: bool
) -> list[dict[str, Any]]:
    from PIL import Image, UnidentifiedImageError

    side = read_sidecar(path)
    try:
        with Image.open(path) as image:
            thumb = _thumb(image, thumbs / f"{uuid.uuid4().hex[:12]}.jpg")
    except (OSError, UnidentifiedImageError):
        notes.append(f"{rel}: not a readable image, skipped")
        return []
    parts = [side.title or "", side.text, exif_text(path), _ocr_text(path, notes) if ocr else ""]
    return [
        {
            "id": rel,
            "title": side.title or name_words(path) or path.name,
            "url": side.url,
            "caption": side.text,
            "text": " ".join([name_words(path), *[p for p in parts if p]]),
            "thumb": thumb,
        }
    ]


def _video_records(
    path: Path, rel: str, thumbs: Path, notes: list[str], digest: bool, seconds: float
) -> list[dict[str, Any]]:
    from omnilab.media.errors import MediaError
    from omnilab.media.probe import probe
    from omnilab.media.video import frames_at

    side = read_sidecar(path)
    title = side.title or name_words(path) or path.name
    try:
        duration = float(probe(path).duration or 0.0)
    except MediaError as e:
        notes.append(f"{rel}: {e}")
        return []
    passages, more = video_passages(path, digest=digest, seconds=seconds)
    notes += more
    base = f"{title} {name_words(path)} {side.text}"
    spans = [(p.start, p.end, p.text) for p in passages] or [(0.0, duration, "")]
    records: list[dict[str, Any]] = []
    times = [min(max(start, 0.0), max(duration - 0.05, 0.0)) for start, _e, _t in spans]
    try:
        frames = frames_at(path, times, max_edge=_THUMB_EDGE)
    except MediaError as e:
        notes.append(f"{rel}: no poster frame ({e})")
        frames = []
    for number, (start, end, text) in enumerate(spans):
        thumb = None
        if number < len(frames):
            thumb = _thumb(frames[number].image, thumbs / f"{uuid.uuid4().hex[:12]}.jpg")
        records.append(
            {
                "id": f"{rel}#{number}",
                "video": rel,
                "title": title,
                "url": side.url,
                "caption": text or side.text,
                "text": f"{base} {text}".strip(),
                "thumb": thumb,
                "start": start,
                "end": end or duration,
            }
        )
    return records


def build_media_index(
    kind: MediaKind,
    source: Path,
    out: Path,
    *,
    ocr: bool = True,
    digest: bool = True,
    passage_seconds: float = PASSAGE_SECONDS,
    on_progress: Progress | None = None,
) -> Path:
    """Index the images or videos under ``source`` into ``out`` (see the module docstring).

    An index already in ``out`` is replaced whole once the new one is complete; a folder that
    is not a media index is never overwritten. Videos are cut into passages of about
    ``passage_seconds`` (30). Returns ``out``.
    """
    import bm25s

    files = media_files(source, IMAGE_SUFFIXES if kind == "image" else VIDEO_SUFFIXES)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not _is_index(out))):
        raise WebError(
            WebErrorCode.INVALID_ARGS, f"{out} exists and is not a media index: choose a new folder"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        thumbs = tmp / "thumbs"
        thumbs.mkdir()
        records: list[dict[str, Any]] = []
        notes: list[str] = []
        root = source if source.is_dir() else source.parent
        for done, path in enumerate(files, start=1):
            rel = path.relative_to(root).as_posix()
            if kind == "image":
                records += _image_records(path, rel, thumbs, notes, ocr)
            else:
                records += _video_records(path, rel, thumbs, notes, digest, passage_seconds)
            if on_progress is not None:
                on_progress(done, len(files), path.name)
        if not records:
            raise WebError(WebErrorCode.BAD_CORPUS, f"nothing readable to index in {source}")
        with (tmp / "entries.jsonl").open("w", encoding="utf-8") as f:
            for record in records:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        tokens = tokenize([f"{r['title']}\n{r['text']}" for r in records])
        if not any(tokens):
            raise WebError(
                WebErrorCode.BAD_CORPUS,
                f"nothing to search by in {source}: no file names, sidecars or text with words; "
                "add sidecar captions (photo.txt or photo.json beside photo.jpg)",
            )
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        retriever.save(str(tmp / "bm25"), show_progress=False)
        manifest = MediaIndexManifest(
            kind=kind,
            source=str(source.resolve()),
            files=len(files),
            entries=len(records),
            notes=notes[:50],
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            build_id=uuid.uuid4().hex,
        )
        (tmp / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
        _swap_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _is_index(path: Path) -> bool:
    return (path / "manifest.json").is_file() and (path / "entries.jsonl").is_file()


class MediaIndex:
    """A built image or video index, opened for search."""

    def __init__(self, path: Path, manifest: MediaIndexManifest) -> None:
        import bm25s

        self.path = path
        self.manifest = manifest
        self.kind: MediaKind = manifest.kind
        self._bm25 = bm25s.BM25.load(str(path / "bm25"), show_progress=False)
        with (path / "entries.jsonl").open(encoding="utf-8") as f:
            self.records: list[dict[str, Any]] = [json.loads(line) for line in f if line.strip()]
        self._lock = threading.Lock()

    def search(self, query: str, *, top_k: int, keyframes: int = 1) -> list[MediaHit]:
        """The best ``top_k`` images, or videos (one hit per video: its best passage).

        ``keyframes`` above 1: each video hit's picture is a sheet of that many frames of its
        passage, from the source file (:mod:`~omnilab.tools.mediasearch.keyframes`), instead of
        the stored poster frame."""
        (terms,) = tokenize([query])
        if not terms or top_k < 1:
            return []
        k = min(len(self.records), max(4 * top_k, 20))
        with self._lock:
            found, scores = self._bm25.retrieve([terms], k=k, show_progress=False)
        hits: list[MediaHit] = []
        seen: set[str] = set()
        for number, score in zip(found[0], scores[0], strict=True):
            record = self.records[int(number)]
            item = str(record.get("video") or record["id"])
            if score <= 0 or item in seen:
                continue
            seen.add(item)
            hits.append(self._hit(record, float(score), set(terms)))
            if len(hits) == top_k:
                break
        if self.kind == "video" and keyframes > 1:
            hits = [self._with_keyframes(hit, keyframes) for hit in hits]
        return hits

    def _with_keyframes(self, hit: MediaHit, num: int) -> MediaHit:
        from omnilab.tools.mediasearch.keyframes import keyframe_sheet

        rel = hit.url.removeprefix("video://").split("#", 1)[0]
        source = Path(self.manifest.source)
        video = (source / rel).resolve()
        if not video.is_relative_to(source.resolve()):  # a hand-edited entry stays inside
            return hit
        sheet = keyframe_sheet(video, hit.start_s or 0.0, hit.end_s or 0.0, num)
        return hit.model_copy(update={"thumbnail": str(sheet)}) if sheet else hit

    def _hit(self, record: dict[str, Any], score: float, terms: set[str]) -> MediaHit:
        thumb = record.get("thumb")
        start, end = record.get("start"), record.get("end")
        url = f"{self.kind}://{record.get('video') or record['id']}"
        if start is not None:
            url += f"#t={start:g},{end:g}"
        return MediaHit(
            kind=self.kind,
            title=str(record["title"]),
            url=url,
            snippet=make_snippet(str(record.get("caption") or record["text"]), terms),
            # The file name only: a hand-edited entry cannot point outside the index.
            thumbnail=str(self.path / "thumbs" / Path(thumb).name) if thumb else None,
            source_page=record.get("url"),
            start_s=start,
            end_s=end,
            provider="local",
            score=round(score, 4),
        )


def _read_manifest(path: Path) -> MediaIndexManifest:
    hint = f"build one with: omnilab index build --kind image|video DIR --out {path}"
    try:
        manifest = MediaIndexManifest.model_validate_json((path / "manifest.json").read_bytes())
    except OSError:
        raise WebError(WebErrorCode.NO_INDEX, f"no media index at {path}; {hint}") from None
    except ValidationError:
        raise WebError(WebErrorCode.NO_INDEX, f"{path} is not a media index; {hint}") from None
    if manifest.version != MEDIA_INDEX_VERSION:
        raise WebError(WebErrorCode.NO_INDEX, f"{path} is from another omnilab version; rebuild it")
    return manifest


@lru_cache(maxsize=16)
def _load(path: Path, build_id: str) -> MediaIndex:
    return MediaIndex(path, _read_manifest(path))


def open_media_index(path: Path, kind: MediaKind | None = None) -> MediaIndex:
    """The media index at ``path`` (loaded once per build); ``NO_INDEX`` when there is none or
    it holds another ``kind``."""
    path = path.resolve()
    manifest = _read_manifest(path)
    if kind is not None and manifest.kind != kind:
        raise WebError(
            WebErrorCode.NO_INDEX, f"{path} is a {manifest.kind} index, not a {kind} index"
        )
    return _load(path, manifest.build_id)
