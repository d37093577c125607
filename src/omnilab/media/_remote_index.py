"""The media cache's bookkeeping for fetched objects (:mod:`omnilab.media.remote`).

Entries of fetched objects share one folder of the cache (keys start with ``r-``), so their
bytes count toward the cache's bound and LRU like any entry. Beside them, in a dot folder the
cache does not count, each entry's URL and version are recorded (what ``omnilab cache show``
lists), and each URL this machine began to fetch has an empty mark: a URL without one is
fetched with one GET that also says its version (no look-up first, :mod:`._remote_get`), one
with it is looked up first (a likely cache hit, or a download to resume). The mark is a hint
only: without it, or with a stale one, a fetch is as correct, one request dearer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from omnilab.media.cache import MediaCache

__all__ = [
    "CachedObject",
    "cached_objects",
    "entry_key",
    "evict_after_fetch",
    "mark_seen",
    "record",
    "seen",
    "suffix_of",
    "url_lock_key",
    "write_private",
]

KEY_PREFIX = "r-"
_INDEX = ".remote"
_SEEN_PREFIX = "u-"
_SAFE_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,8}")


@dataclass(frozen=True)
class CachedObject:
    """A fetched object still in the media cache (see :func:`cached_objects`)."""

    url: str
    version: str
    path: Path
    size: int
    last_use: float


def entry_key(shown: str, tag: str) -> str:
    """The cache key of the object at ``shown`` (a public URL) in version ``tag``."""
    canon = json.dumps({"url": shown, "version": tag, "op": "remote"}, sort_keys=True)
    return KEY_PREFIX + hashlib.sha256(canon.encode()).hexdigest()


def url_lock_key(shown: str) -> str:
    """The key whose lock a download of any version of ``shown`` holds (one writer per URL,
    so a first fetch, whose version is not known before its GET, has a lock to take)."""
    return _SEEN_PREFIX + hashlib.sha256(shown.encode()).hexdigest()


def cached_objects(cache: MediaCache | None = None) -> list[CachedObject]:
    """The fetched objects the cache holds now, most recently used first."""
    store = cache if cache is not None else MediaCache.default()
    folder = store.root / _INDEX
    found: list[CachedObject] = []
    if not folder.is_dir():
        return found
    for path in folder.glob(f"{KEY_PREFIX}*.json"):
        try:
            meta = json.loads(path.read_text())
            entry = store.path_for(path.stem, str(meta["suffix"]))
            st = entry.stat()
            found.append(
                CachedObject(str(meta["url"]), str(meta["version"]), entry, st.st_size, st.st_mtime)
            )
        except FileNotFoundError:
            path.unlink(missing_ok=True)  # the entry was evicted
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(found, key=lambda o: o.last_use, reverse=True)


def record(store: MediaCache, key: str, shown: str, tag: str, size: int) -> None:
    """Record that entry ``key`` holds ``shown`` in version ``tag``."""
    folder = store.root / _INDEX
    folder.mkdir(mode=0o700, exist_ok=True)
    body = {"url": shown, "version": tag, "size": size, "suffix": suffix_of(shown)}
    write_private(folder / f"{key}.json", json.dumps(body))


def seen(store: MediaCache, shown: str) -> bool:
    """Whether a fetch of ``shown`` began on this machine before (see the module docstring)."""
    return (store.root / _INDEX / url_lock_key(shown)).exists()


def mark_seen(store: MediaCache, shown: str) -> None:
    folder = store.root / _INDEX
    folder.mkdir(mode=0o700, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    os.close(os.open(folder / url_lock_key(shown), flags, 0o600))


def write_private(path: Path, text: str) -> None:
    """``text`` to ``path`` through a 0600 temporary file beside it, renamed over it."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(tmp, flags, 0o600), "w") as f:
        f.write(text)
    tmp.replace(path)


def suffix_of(shown: str) -> str:
    """The URL's file extension when it is a plain one (decoders pick a format by the name)."""
    name = urlsplit(shown).path.rsplit("/", 1)[-1]
    ext = os.path.splitext(name)[1]  # noqa: PTH122 - a URL path, not a local one
    return ext.lower() if _SAFE_SUFFIX.fullmatch(ext) else ""


_EVICT_GATES: dict[str, tuple[threading.Lock, threading.Lock]] = {}
_GATES_LOCK = threading.Lock()


def evict_after_fetch(store: MediaCache) -> None:
    """``store.evict()`` after a download, one scan for the fetches of this process that land
    while one is queued: a thread waiting to scan starts after this entry was renamed in, so it
    counts it (8 concurrent cold fetches scanned the cache 8 times)."""
    with _GATES_LOCK:
        queued, scanning = _EVICT_GATES.setdefault(
            str(store.root), (threading.Lock(), threading.Lock())
        )
    if not queued.acquire(blocking=False):
        return  # another thread is waiting to scan: its scan begins after this point
    try:
        scanning.acquire()
    finally:
        queued.release()
    try:
        store.evict()
    finally:
        scanning.release()
