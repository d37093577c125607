"""A content-addressed, size-bounded file cache shared by concurrent processes.

Keys hash the *content identity* of the source (size plus its first and last MiB, so a copy or a
rename hits and an edit misses), the operation name and its parameters. Entries are written to a
temporary file in the cache folder and renamed into place, so a reader never sees a partial file
and two processes producing the same entry both end with one complete copy. Least recently used
entries (hits refresh the modification time) are evicted under a cross-process lock once the
total size passes the bound.

The cache holds frames, crops and audio of every input a user ever asked about: its folders are
private to the user (0700, an older 0755 cache is tightened on first use) and its files 0600.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from filelock import FileLock

from omnilab import _wsread
from omnilab._atomic import make_folders
from omnilab._ownfolders import check_ancestors, check_folder

__all__ = ["CacheStats", "MediaCache", "file_identity", "private_folder"]

_EDGE_BYTES = 1 << 20
# Entries used this recently are never evicted, so a path just handed to a caller stays readable.
_GRACE_SECONDS = 30.0
# Temporary files older than this belong to a crashed writer and are removed during eviction.
_STALE_TMP_SECONDS = 3600.0
_TMP_MARK = ".tmp-"
# Per-key producer locks live apart from the entries so they are never counted or evicted as data.
_LOCK_DIR = ".locks"


def file_identity(path: Path) -> str:
    """A hash that changes when the file's content does (size, head and tail)."""
    if _wsread.untrusted_root(path) is not None:
        # In a workspace: no link is followed, and nothing but a regular file is read.
        fd, st = _wsread.open_file(path)
        os.close(fd)
        return _identity(Path(os.path.abspath(path)), st.st_size, st.st_mtime_ns)  # noqa: PTH100
    st = path.stat()
    return _identity(path.resolve(), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4096)
def _identity(path: Path, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256(str(size).encode())
    fd, _ = _wsread.open_file(path)
    with os.fdopen(fd, "rb") as f:
        h.update(f.read(_EDGE_BYTES))
        if size > 2 * _EDGE_BYTES:
            f.seek(-_EDGE_BYTES, os.SEEK_END)
            h.update(f.read(_EDGE_BYTES))
        elif size > _EDGE_BYTES:
            h.update(f.read())
    return h.hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """What :meth:`MediaCache.stats` reports."""

    root: Path
    entries: int
    bytes: int
    max_bytes: int
    oldest: float | None
    """Last use of the least recently used entry (seconds since the epoch)."""
    newest: float | None


@dataclass(frozen=True)
class _Entry:
    path: Path
    size: int
    mtime: float


class MediaCache:
    """Files produced by media operations, keyed by source content, operation and parameters."""

    def __init__(self, root: Path, *, max_bytes: int) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes

    @classmethod
    def default(cls) -> MediaCache:
        """The cache configured in settings (``cache_dir``/media, ``media.cache_max_bytes``)."""
        # Imported here: a cache given by its folder (a fetch with ``cache=``, a worker) loads
        # no settings (pydantic-settings, the config files: ~0.06 s of a cold start).
        from omnilab.config import get_settings

        s = get_settings()
        return cls(s.cache_dir / "media", max_bytes=s.media.cache_max_bytes)

    def key(self, source: Path, op: str, params: Mapping[str, object]) -> str:
        """The entry key for ``op(source, **params)``."""
        canon = json.dumps(
            {"src": file_identity(source), "op": op, "params": params},
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(canon.encode()).hexdigest()

    def path_for(self, key: str, suffix: str) -> Path:
        return self.root / key[:2] / f"{key}{suffix}"

    def get(self, key: str, suffix: str) -> Path | None:
        """The cached file for ``key``, refreshed as recently used, or None."""
        path = self.path_for(key, suffix)
        try:
            os.utime(path)
        except FileNotFoundError:
            return None
        return path

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold ``key``'s producer lock (across processes) for the block."""
        private_folder(self.root)
        locks = self.root / _LOCK_DIR
        locks.mkdir(mode=0o700, exist_ok=True)
        # The OS drops the lock if its holder dies.
        with FileLock(str(locks / f"{key}.lock")):
            yield

    def put(self, key: str, suffix: str, data: bytes) -> Path:
        """Store ``data`` as the entry for ``key`` (atomically; no lock, no eviction).

        For content-addressed entries written under a lock the caller holds (see :meth:`lock`),
        in batches followed by one :meth:`evict`.
        """
        final = self.path_for(key, suffix)
        private_folder(self.root)
        final.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = final.with_name(f"{key}{_TMP_MARK}{uuid.uuid4().hex}{suffix}")
        try:
            tmp.write_bytes(data)
            tmp.replace(final)
        finally:
            tmp.unlink(missing_ok=True)
        return final

    def get_or_create(self, key: str, suffix: str, produce: Callable[[Path], None]) -> Path:
        """Return the entry, calling ``produce(tmp_path)`` to write it when missing.

        If ``produce`` raises, nothing is left behind and the error propagates.
        """
        hit = self.get(key, suffix)
        if hit is not None:
            return hit
        final = self.path_for(key, suffix)
        private_folder(self.root)
        final.parent.mkdir(mode=0o700, exist_ok=True)
        locks = self.root / _LOCK_DIR
        locks.mkdir(mode=0o700, exist_ok=True)
        # One producer per key across processes; the OS drops the lock if its holder dies.
        with FileLock(str(locks / f"{key}.lock")):
            hit = self.get(key, suffix)
            if hit is not None:
                return hit  # another process produced it while this one waited
            # The suffix stays last so encoders that pick a format from the name still can.
            tmp = final.with_name(f"{key}{_TMP_MARK}{uuid.uuid4().hex}{suffix}")
            try:
                produce(tmp)
                tmp.chmod(0o600)  # encoders create files by the umask (often 0644)
                tmp.replace(final)
            finally:
                tmp.unlink(missing_ok=True)
        self.evict()
        return final

    def size(self) -> int:
        """Total bytes of complete entries."""
        return sum(e.size for e in self._entries())

    def stats(self) -> CacheStats:
        """How many entries the cache holds, their bytes, and the oldest and newest use."""
        entries = list(self._entries())
        times = [e.mtime for e in entries]
        return CacheStats(
            root=self.root,
            entries=len(entries),
            bytes=sum(e.size for e in entries),
            max_bytes=self.max_bytes,
            oldest=min(times, default=None),
            newest=max(times, default=None),
        )

    def evict(self) -> None:
        """Remove least recently used entries until the cache is within its bound."""
        if not self.root.exists():
            return
        with FileLock(str(self.root / ".lock"), timeout=60):
            entries = list(self._entries(collect_stale=True))
            total = sum(e.size for e in entries)
            if total <= self.max_bytes:
                return
            now = time.time()
            for entry in sorted(entries, key=lambda e: e.mtime):
                if total <= self.max_bytes:
                    break
                if now - entry.mtime < _GRACE_SECONDS:
                    continue
                with contextlib.suppress(FileNotFoundError):
                    entry.path.unlink()
                    total -= entry.size

    def clear(self) -> int:
        """Remove every entry; returns the bytes freed."""
        freed = 0
        for entry in self._entries():
            with contextlib.suppress(FileNotFoundError):
                entry.path.unlink()
                freed += entry.size
        return freed

    def _entries(self, *, collect_stale: bool = False) -> Iterator[_Entry]:
        # os.scandir: an eviction follows every new entry (a cold fetch of 50 objects scanned
        # 45 times), and Path.iterdir plus Path.stat cost several times as much per file.
        if not self.root.exists():
            return
        now = time.time()
        with os.scandir(self.root) as listing:
            folders = [(sub.name, sub.path) for sub in listing if sub.is_dir()]
        for name, folder in folders:
            if name == _LOCK_DIR:
                if collect_stale and _locks_due(folder, now):
                    _remove_stale(Path(folder), now)
                continue
            if name.startswith("."):
                continue  # bookkeeping (e.g. media.remote's URL records), not data
            try:
                with os.scandir(folder) as listing:
                    files = list(listing)
            except FileNotFoundError:
                continue  # removed meanwhile
            for f in files:
                try:
                    st = f.stat()
                except FileNotFoundError:
                    continue  # evicted or renamed by another process meanwhile
                if _TMP_MARK in f.name:
                    if collect_stale and now - st.st_mtime > _STALE_TMP_SECONDS:
                        Path(f.path).unlink(missing_ok=True)
                    continue
                yield _Entry(Path(f.path), st.st_size, st.st_mtime)


def private_folder(root: Path) -> None:
    """Makes ``root`` (and missing parents, 0700) and leaves it 0700; refuses a link or a
    folder of another user's (:class:`~omnilab._ownfolders.UnsafeFolderError`)."""
    key = str(root)
    if key in _tightened:
        return
    check_ancestors(root, what="cache_dir")  # a folder above it of another user's: refused
    make_folders(root)
    st = os.lstat(root)
    if st.st_mode & 0o077 and st.st_uid == os.geteuid() and stat.S_ISDIR(st.st_mode):
        root.chmod(0o700)
    # A link or another user's folder is refused (one line): its owner could swap entries.
    check_folder(root, what="cache_dir")
    _tightened.add(key)


_tightened: set[str] = set()


def _remove_stale(lock_dir: Path, now: float) -> None:
    # An unlocked lock file is harmless to delete; one held right now is recreated by its waiter.
    for f in lock_dir.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if now - f.stat().st_mtime > _STALE_TMP_SECONDS:
                f.unlink()


_LOCKS_SWEPT: dict[str, float] = {}
_LOCKS_EVERY_S = 60.0


def _locks_due(folder: str, now: float) -> bool:
    """Whether this process should look for stale lock files now: they are an hour old before
    they go, and each look stats every lock file (one per key, or URL, used in the last hour),
    so once a minute per cache is plenty."""
    if now - _LOCKS_SWEPT.get(folder, float("-inf")) < _LOCKS_EVERY_S:
        return False
    _LOCKS_SWEPT[folder] = now
    return True
