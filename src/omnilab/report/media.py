"""Media into the report folder: small copies made when the report is built.

A page never points at the dataset, the media cache or the run's workspace: every image, audio
segment and clip a page shows is copied (images downscaled to a thumbnail and a larger view)
under ``<report>/media/`` once, named by a hash of its source, so a report opens from any disk.
A media part is found at its own path, else among the run's saved copies (the trajectory's
``.media`` folder, the task's workspace) by file name; inline bytes are written out.

A trajectory is data, not the operator's word: a part's path is copied only when it lies
beneath the run folder or the harness's own media cache (``roots``, see :func:`run_roots`), as a :class:`~omnilab._datapath.DataPath` opened there by
:mod:`omnilab._wsread` (no link followed on any component, regular files only, images refused on
their header's size before decoding). ``{"type": "audio", "path": "/etc/shadow"}``, a ``..``
escape or a ``perception/<input>`` linked to a root-only file becomes a placeholder with a notice.
"""

from __future__ import annotations

import contextlib
import hashlib
import mimetypes
import os
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from omnilab import _wsread
from omnilab._atomic import write_atomic
from omnilab._datapath import DataPath, DataPathError
from omnilab._ownfolders import own_links_resolved
from omnilab.config import get_settings
from omnilab.content import Audio, Document, Image, Video

__all__ = ["MediaCopier", "MediaRef", "run_roots"]

THUMB_PX = 320
"""Longest side of an image thumbnail."""
LARGE_PX = 1280
"""Longest side of the enlarged view."""
MAX_COPY_BYTES = 25 * 1024 * 1024
"""Audio and video larger than this are not copied (the page names them instead)."""


def run_roots(*folders: Path, media_roots: Sequence[Path] = ()) -> tuple[Path, ...]:
    """The folders a run's report may copy media from: the run's own ``folders``, this user's
    media cache (frames and clips the tools made; a cache of another user's or behind a link
    is refused where it is made) and the operator's ``media_roots`` (``--media-root``), each
    refused with one line (:class:`~omnilab._ownfolders.UnsafeFolderError`) when a link another
    user owns lies on its path (they could point it at root's own files). The dataset's media
    are otherwise shown through the copies saved with the run (the workspace's ``inputs/``),
    never from where a trajectory says they lie."""
    for root in media_roots:
        own_links_resolved(root, what="--media-root")
    return (*folders, *media_roots, get_settings().cache_dir / "media")


@dataclass(frozen=True)
class MediaRef:
    """Where a media part lies in the report, relative to the report folder."""

    kind: str
    name: str
    src: str | None
    """The copy (the large view for images); ``None`` when it could not be copied."""
    thumb: str | None = None
    note: str = ""
    """Why there is no copy, for the page."""


class MediaCopier:
    """Copies media into ``out/media`` once per source (by path, size and modification time);
    only files beneath ``roots`` (the run folders the trajectories belong to) are copied."""

    def __init__(
        self, out: Path, *, roots: tuple[Path, ...] = (), workers: int | None = None
    ) -> None:
        self.out = out
        self.roots = roots
        self.folder = out / "media"
        self._done: dict[tuple[str, ...], MediaRef] = {}
        # The same input file recurs in every task (and each frame in every later call):
        # answered from memory, without a stat per mention.
        self._seen: dict[tuple[str, str, tuple[Path, ...]], MediaRef] = {}
        # Decoding, scaling and copying run in threads (Pillow and file copies release the
        # GIL) while pages are written; names are known at once, so pages need not wait.
        self._pool = ThreadPoolExecutor(max_workers=workers or min(4, os.cpu_count() or 1))
        self._jobs: list[Future[None]] = []

    def __enter__(self) -> MediaCopier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Wait until every copy is written (the first failure is raised)."""
        self._pool.shutdown(wait=True)
        for job in self._jobs:
            job.result()
        self._jobs = []

    def ref(
        self, part: Image | Audio | Video | Document, *, search: tuple[Path, ...] = ()
    ) -> MediaRef:
        """The report's copy of ``part``; ``search`` lists the run's folders to look in when
        ``part.path`` no longer exists (by file name)."""
        name = part.name
        if part.data is not None:
            key: tuple[str, ...] = ("data", hashlib.sha256(part.data).hexdigest())
            if key not in self._done:
                suffix = part.path.suffix if part.path is not None else _suffix(part.mime_type)
                self._done[key] = self._store(part.type, name, key[1], suffix, data=part.data)
            return self._done[key]
        for folder in search:
            _wsread.mark_untrusted(folder)
        # A file found at its own path is the same for every task: keyed without ``search``.
        found = self._seen.get((part.type, str(part.path), ()))
        if found is None:
            seen = (part.type, str(part.path), search)
            found = self._seen.get(seen)
            if found is None:
                found = self._source_ref(part, search)
                home = _beneath(part.path, self.roots)
                at_home = home is not None and _wsread.regular_file(home)
                self._seen[(part.type, str(part.path), () if at_home else search)] = found
        return found

    def _source_ref(
        self, part: Image | Audio | Video | Document, search: tuple[Path, ...]
    ) -> MediaRef:
        name = part.name
        source = _locate(part.path, self.roots, search)
        if source is None:
            if part.path is not None and _beneath(part.path, self.roots) is None:
                note = "not copied: the trajectory names a file outside its run folder"
                return MediaRef(part.type, name, None, note=note)
            return MediaRef(part.type, name, None, note="not saved with the run")
        try:
            fd, stat = _wsread.open_file(source)
        except OSError as exc:
            return MediaRef(part.type, name, None, note=f"not copied: {exc}")
        os.close(fd)
        key: tuple[str, ...] = (str(source.shown()), str(stat.st_size), str(stat.st_mtime_ns))
        if key not in self._done:
            digest = hashlib.sha256("\0".join(key).encode()).hexdigest()
            if part.type in ("audio", "video") and stat.st_size > MAX_COPY_BYTES:
                size = stat.st_size / 1e6
                self._done[key] = MediaRef(part.type, name, None, note=f"{size:.0f} MB, not copied")
            else:
                suffix = Path(source.name).suffix
                self._done[key] = self._store(part.type, name, digest, suffix, path=source)
        return self._done[key]

    def _store(
        self,
        kind: str,
        name: str,
        digest: str,
        suffix: str,
        *,
        path: DataPath | None = None,
        data: bytes | None = None,
    ) -> MediaRef:
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = digest[:24]
        if kind == "image":
            if not _readable_image(path, data):
                return MediaRef(kind, name, None, note="unreadable image")
            large, thumb = f"{stem}.jpg", f"{stem}.t.jpg"
            self._jobs.append(self._pool.submit(self._images, path, data, large, thumb))
            return MediaRef(kind, name, f"media/{large}", thumb=f"media/{thumb}")
        target = self.folder / f"{stem}{suffix.lower()}"
        if path is not None:
            self._jobs.append(self._pool.submit(_copy, path, target))
        elif not target.exists():
            target.write_bytes(data or b"")
        return MediaRef(kind, name, f"media/{target.name}")

    def _images(self, path: DataPath | None, data: bytes | None, large: str, thumb: str) -> None:
        """The enlarged view (the file itself when it is a JPEG small enough) and the
        thumbnail."""
        if (self.folder / thumb).exists():
            return
        if path is not None:
            data = _wsread.read_bytes(path)
        try:
            label = str(path.shown()) if path is not None else None
            with _wsread.open_image(data or b"", name=label) as picture:
                keep = picture.format == "JPEG" and max(picture.size) <= LARGE_PX
                if keep and path is not None:
                    _write_new(self.folder / large, data or b"")
                else:
                    _scaled(picture, LARGE_PX, self.folder / large)
                _scaled(picture, THUMB_PX, self.folder / thumb)
        except (OSError, ValueError, UnidentifiedImageError, PILImage.DecompressionBombError):
            # Its header read but its pixels do not (a truncated upload): a grey tile stands
            # in, so the page still shows something and the report is still written.
            tile = PILImage.new("RGB", (THUMB_PX, THUMB_PX), (200, 200, 200))
            for target in (large, thumb):
                if not (self.folder / target).exists():
                    _scaled(tile, THUMB_PX, self.folder / target)


def _readable_image(path: DataPath | None, data: bytes | None) -> bool:
    """Whether Pillow can read the image and its header's size is within the pixel limit (a
    header read; the worker threads decode it)."""
    try:
        if data is not None:
            with _wsread.open_image(data):
                return True
        assert path is not None
        fd, _ = _wsread.open_file(path)
        with os.fdopen(fd, "rb") as f, PILImage.open(f) as picture:
            _wsread.check_pixels(picture, path.name)
            return True
    except (OSError, UnidentifiedImageError, PILImage.DecompressionBombError):
        return False


def _scaled(picture: PILImage.Image, side: int, target: Path) -> None:
    copy = picture.convert("RGB") if picture.mode != "RGB" else picture.copy()
    copy.thumbnail((side, side), PILImage.Resampling.BILINEAR)
    copy.save(target, format="JPEG", quality=82)


def _copy(source: DataPath, target: Path) -> None:
    if not target.exists():
        _write_new(target, _wsread.read_bytes(source, max_bytes=MAX_COPY_BYTES))


def _write_new(target: Path, data: bytes) -> None:
    """Writes ``target`` (in the report's own folder) beside it first, then renames it."""
    write_atomic(target, data, sync=False)


def _suffix(mime: str | None) -> str:
    return (mimetypes.guess_extension(mime or "") or ".bin") if mime else ".bin"


def _beneath(path: Path | None, roots: tuple[Path, ...]) -> DataPath | None:
    """``path`` (from a trajectory) as a path beneath one of ``roots``, else None (lexically:
    no ``..``; links on the way are refused when it is opened)."""
    if path is None:
        return None
    full = os.path.abspath(path)  # noqa: PTH100 - lexical: resolve() would follow links
    for root in roots:
        top = os.path.abspath(root).rstrip("/")  # noqa: PTH100
        if full.startswith(top + "/"):
            with contextlib.suppress(DataPathError):
                return DataPath.beneath(top, full[len(top) + 1 :], item="trajectory media")
    return None


def _locate(
    path: Path | None, roots: tuple[Path, ...], search: tuple[Path, ...]
) -> DataPath | None:
    """The file a part names: itself when beneath a root, else a saved copy of that name in
    the run's folders (``search``), each opened through no link."""
    if path is None:
        return None
    home = _beneath(path, roots)
    if home is not None and _wsread.regular_file(home):
        return home
    for folder in search:
        for rel in (path.name, f"perception/{path.name}", f"inputs/{path.name}"):
            try:
                candidate = DataPath.beneath(folder, rel, item="trajectory media")
            except DataPathError:
                continue
            if _wsread.regular_file(candidate):
                return candidate
    return None
