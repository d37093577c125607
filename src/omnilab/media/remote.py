"""Inputs at URLs (``https://``, ``s3://``, ``gs://``, ``az://``): fetched once per machine into the
media cache, then read like local files.

A cluster seldom has a shared file system: each node fetches what its tasks need. An object is
keyed by its URL (without query, fragment or user info, so two signed URLs of one object share an
entry) plus its version as the store reports it (S3's VersionId or ETag, GCS's generation, Azure's
and HTTP's ETag, else Last-Modified and size), so a changed object is a new entry and the old one
ages out by the cache's LRU bound. Concurrent tasks on a machine wait for one download (the
cache's cross-process lock, one per URL). A URL this machine never fetched is read with one GET
whose response also gives its version (S3; :mod:`._remote_get`), one it did is looked up first
(its entry is likely there). A download goes to a partial file beside the entry, in parallel
ranges, with a small record of the ranges already written, so a download that was killed resumes
where it stopped; it is renamed into place only when its size (and MD5 where the store gives one)
match and the object's version did not change meanwhile.

Credentials come only from each store's standard chain (AWS environment/profile, Google ADC,
Azure environment) or ``[remote.buckets]``, read by botocore's S3 client (``s3://``) and
fsspec's filesystems (the others; :mod:`._remote_object`); no message this module writes holds
a URL's query or user info (:func:`public_url`), nor a library's own error text, which may.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from omnilab._urls import REMOTE_SCHEMES, is_remote, public_url
from omnilab.errors import OmnilabError
from omnilab.media._remote_fs import status_of, transient
from omnilab.media._remote_index import (
    CachedObject,
    cached_objects,
    entry_key,
    evict_after_fetch,
    mark_seen,
    record,
    seen,
    suffix_of,
    url_lock_key,
    write_private,
)
from omnilab.media._remote_object import RemoteObject, open_object
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode

__all__ = [
    "REMOTE_SCHEMES",
    "CachedObject",
    "Fetched",
    "ObjectVersion",
    "cached_objects",
    "fetch",
    "is_remote",
    "public_url",
    "stat_remote",
]

# Objects up to this size come in one request; larger ones in ranges of _CHUNK bytes.
_CHUNK = 8 << 20
_WORKERS = 4
_RETRIES = 4
_BACKOFF_S = 0.5
_PART = ".tmp-part"  # the cache's temporary mark: never counted, collected when stale

T = TypeVar("T")


@dataclass(frozen=True)
class ObjectVersion:
    """What the store says about an object: enough to tell a changed object from the same one."""

    tag: str
    """VersionId, ETag, generation, or ``mtime:<Last-Modified>`` (each with the size)."""
    size: int
    md5: str | None
    """Hex MD5 of the content where the store gives one (S3 single-part ETag, GCS, HTTP)."""


@dataclass(frozen=True)
class Fetched:
    """A fetched object: its local copy in the media cache and what was downloaded for it."""

    path: Path
    url: str
    """The URL as recorded: without query, fragment or user info."""
    version: ObjectVersion
    downloaded: int
    """Bytes downloaded by this call (0 on a cache hit; less than the size on a resume)."""


def stat_remote(url: str) -> ObjectVersion:
    """The object's current version and size (one request; retried on transient errors)."""
    obj = open_object(url)
    return _version(_call(url, obj.info))


def fetch(
    url: str,
    *,
    cache: MediaCache | None = None,
    expect: ObjectVersion | None = None,
    workers: int = _WORKERS,
    chunk_bytes: int = _CHUNK,
    progress: Callable[[int, int], None] | None = None,
) -> Fetched:
    """The local copy of ``url`` in the media cache, downloading it when missing.

    ``expect``: the version a run recorded earlier; a different object now raises ``CHANGED``
    (a resumed run must not mix two versions of its inputs). ``progress(done, total)`` is
    called as bytes arrive. Raises :class:`MediaError` (``NOT_FOUND``, ``DENIED``,
    ``UNREACHABLE`` after retries, ``CHANGED``, ``CORRUPT`` on a failed check) and
    :class:`OmnilabError` when the scheme's package (botocore, or fsspec's filesystem) is not
    installed or a variable the bucket's settings name is unset.
    """
    obj = open_object(url)
    job = _Job(obj, url, cache if cache is not None else MediaCache.default())
    opts = _Opts(max(1, workers), max(1 << 16, chunk_bytes), progress)
    if obj.ranged and not seen(job.store, job.shown):
        got = _first_fetch(job, expect, opts)  # one GET: version and bytes (see _remote_get)
        if got is not None:
            return got
    version = _version(_call(url, obj.info))
    _check(job.shown, expect, version)
    key, suffix = entry_key(job.shown, version.tag), suffix_of(job.shown)
    hit = job.store.get(key, suffix)
    if hit is not None:
        return Fetched(hit, job.shown, version, 0)
    with job.store.lock(url_lock_key(job.shown)):
        hit = job.store.get(key, suffix)
        if hit is not None:  # another task or process on this machine fetched it meanwhile
            return Fetched(hit, job.shown, version, 0)
        mark_seen(job.store, job.shown)
        got = _download(job, version, None, opts)
    evict_after_fetch(job.store)
    return got


@dataclass(frozen=True)
class _Job:
    obj: RemoteObject
    url: str
    store: MediaCache

    @property
    def shown(self) -> str:
        return public_url(self.url)


@dataclass(frozen=True)
class _Opts:
    workers: int
    chunk: int
    progress: Callable[[int, int], None] | None


def _first_fetch(job: _Job, expect: ObjectVersion | None, opts: _Opts) -> Fetched | None:
    """A URL this machine never fetched: one GET of its first range, which also says its
    version (an object up to one range in one request); ``None`` where the store cannot, or
    another fetch of it began meanwhile (the caller looks it up: likely a hit)."""
    shown = job.shown
    with job.store.lock(url_lock_key(shown)):  # one download per URL: its version is unknown
        if seen(job.store, shown):
            return None
        mark_seen(job.store, shown)  # from now on a look-up first: a resume, or a hit
        first = _call(job.url, lambda: job.obj.first_range(opts.chunk))
        if first is None:
            return None
        version = _version(first[0])
        _check(shown, expect, version)
        hit = job.store.get(entry_key(shown, version.tag), suffix_of(shown))
        if hit is not None:  # fetched before this machine marked URLs: the GET was spent
            return Fetched(hit, shown, version, len(first[1]))
        got = _download(job, version, first[1], opts)
    evict_after_fetch(job.store)
    return got


def _check(shown: str, expect: ObjectVersion | None, version: ObjectVersion) -> None:
    if expect is not None and expect.tag != version.tag:
        raise MediaError(
            MediaErrorCode.CHANGED,
            f"{shown} changed since this run first read it (was {expect.tag}, now {version.tag})",
            path=shown,
        )


def _download(job: _Job, version: ObjectVersion, first: bytes | None, opts: _Opts) -> Fetched:
    """Into the cache under the URL's lock: ``first`` holds the object's first bytes, if read."""
    shown = job.shown
    key, suffix = entry_key(shown, version.tag), suffix_of(shown)
    final = job.store.path_for(key, suffix)
    final.parent.mkdir(mode=0o700, exist_ok=True)
    part = final.with_name(f"{key}{_PART}{suffix}")
    download = _Download(job.obj, job.url, version, part)
    got = download.run(opts, first)
    download.part.replace(final)
    download.record.unlink(missing_ok=True)
    record(job.store, key, shown, version.tag, version.size)
    return Fetched(final, shown, version, got)


class _Download:
    """One object into one partial file, range by range, resumable from its record."""

    def __init__(self, obj: RemoteObject, url: str, version: ObjectVersion, part: Path) -> None:
        self.obj, self.url, self.version, self.part = obj, url, version, part
        self.record = part.with_name(part.name + ".json")
        self._lock = threading.Lock()
        self._whole: bytes | None = None  # the object's bytes, when one range held them

    def run(self, opts: _Opts, first: bytes | None) -> int:
        size, chunk, progress = self.version.size, opts.chunk, opts.progress
        ranges = [(start, min(size, start + chunk)) for start in range(0, size, chunk)]
        done = self._resumable(chunk)
        fd = os.open(self.part, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        got = 0 if first is None else len(first)
        try:
            os.ftruncate(fd, size)  # a sparse file of the object's size; ranges fill it
            if first:
                os.pwrite(fd, first[:size], 0)
                done |= {start for start, end in ranges if end <= len(first)}
                if len(first) >= size:
                    self._whole = first[:size]
            written = sum(end - start for start, end in ranges if start in done)
            todo = [r for r in ranges if r[0] not in done]
            if first and progress is not None:
                progress(written, size)

            def one(r: tuple[int, int]) -> None:
                nonlocal got, written
                start, end = r
                count = self._fill(fd, start, end, single=len(ranges) == 1)
                with self._lock:
                    done.add(start)
                    got += count
                    written += count
                    if len(ranges) > 1:  # one range: nothing to resume from
                        self._save(chunk, done)
                    if progress is not None:
                        progress(written, size)

            if opts.workers == 1 or len(todo) <= 1:
                for r in todo:
                    one(r)
            else:
                with ThreadPoolExecutor(max_workers=opts.workers) as pool:
                    list(pool.map(one, todo))  # re-raises the first failure
            os.fsync(fd)
            verified = self._verify(fd)
        finally:
            os.close(fd)
        if verified:
            return got  # the bytes are the looked-up version's (its MD5): no second look-up
        now = _version(_call(self.url, self.obj.info))
        if now.tag != self.version.tag:
            self.part.unlink(missing_ok=True)
            self.record.unlink(missing_ok=True)
            raise MediaError(
                MediaErrorCode.CHANGED,
                f"{public_url(self.url)} changed while it was being downloaded; run again",
                path=public_url(self.url),
            )
        if verified is False:
            # Nothing of it can be trusted: the next try starts again.
            self.record.unlink(missing_ok=True)
            raise MediaError(
                MediaErrorCode.CORRUPT,
                f"{public_url(self.url)}: the downloaded bytes do not match the store's MD5",
                path=public_url(self.url),
            )
        return got

    def _fill(self, fd: int, start: int, end: int, *, single: bool) -> int:
        """Bytes ``[start, end)`` into ``fd``; a single range is also kept (for its MD5)."""
        if single and not self.obj.ranged:  # a server without byte ranges still serves
            data = _call(self.url, self.obj.read)
        elif not single and self.obj.ranged:  # S3: streamed into the file as it comes
            count = _call(self.url, lambda: self.obj.range_into(start, end, fd))
            self._check_count(count, start, end)
            return count
        else:
            data = _call(self.url, lambda: self.obj.read(start, end))
        self._check_count(len(data), start, end)
        os.pwrite(fd, data, start)
        if single:
            self._whole = bytes(data)
        return len(data)

    def _check_count(self, count: int, start: int, end: int) -> None:
        if count != end - start:
            raise MediaError(
                MediaErrorCode.CORRUPT,
                f"{public_url(self.url)}: the store sent {count} bytes for bytes "
                f"{start}-{end} (does it serve byte ranges?)",
                path=public_url(self.url),
            )

    def _resumable(self, chunk: int) -> set[int]:
        """Ranges an interrupted download of the same version already wrote."""
        try:
            saved = json.loads(self.record.read_text())
            st = os.lstat(self.part)
        except (OSError, ValueError):
            return set()
        if (
            not isinstance(saved, dict)
            or saved.get("tag") != self.version.tag
            or saved.get("size") != self.version.size
            or saved.get("chunk") != chunk
            or not stat.S_ISREG(st.st_mode)
        ):
            return set()
        return {int(s) for s in saved.get("done", []) if isinstance(s, int)}

    def _save(self, chunk: int, done: set[int]) -> None:
        body = {"tag": self.version.tag, "size": self.version.size, "chunk": chunk}
        write_private(self.record, json.dumps({**body, "done": sorted(done)}))

    def _verify(self, fd: int) -> bool | None:
        """Raises on a wrong size; whether the bytes match the store's MD5 (``None``: no MD5).
        A mismatch is reported after a second look-up tells a changed object from bad bytes."""
        st = os.fstat(fd)
        if st.st_size != self.version.size:
            raise MediaError(
                MediaErrorCode.CORRUPT,
                f"{public_url(self.url)}: {st.st_size} bytes on disk, the store says "
                f"{self.version.size}",
                path=public_url(self.url),
            )
        if self.version.md5 is None:
            return None
        h = hashlib.md5(usedforsecurity=False)
        if self._whole is not None:  # the one range's bytes, just written: no read back
            h.update(self._whole)
            return h.hexdigest() == self.version.md5
        os.lseek(fd, 0, os.SEEK_SET)
        while block := os.read(fd, 1 << 20):
            h.update(block)
        return h.hexdigest() == self.version.md5


def _version(info: Mapping[str, Any]) -> ObjectVersion:
    size = info.get("size")
    if not isinstance(size, int) or size < 0:
        raise MediaError(MediaErrorCode.UNSUPPORTED, "the store does not say the object's size")
    lowered = {str(k).lower(): v for k, v in info.items()}
    md5: str | None = None
    etag = lowered.get("etag")
    if isinstance(etag, str):
        bare = etag.strip('"').removeprefix("W/").strip('"')
        if re.fullmatch(r"[0-9a-f]{32}", bare):  # S3 single-part uploads: the ETag is the MD5
            md5 = bare
    for field in ("md5hash", "content-md5"):
        value = lowered.get(field)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                md5 = base64.b64decode(value, validate=True).hex()
    for field in ("versionid", "generation", "etag"):
        value = lowered.get(field)
        if value not in (None, "", "null"):
            return ObjectVersion(f"{field}:{str(value).strip(chr(34))}:{size}", size, md5)
    modified = lowered.get("last-modified") or lowered.get("lastmodified") or lowered.get("mtime")
    tag = f"mtime:{modified}:{size}" if modified else f"size:{size}"
    return ObjectVersion(tag, size, md5)


def _call(url: str, op: Callable[[], T]) -> T:
    """``op()``, retried with backoff on transient errors; store errors as one-line MediaErrors."""
    shown = public_url(url)
    for attempt in range(_RETRIES + 1):
        try:
            return op()
        except OmnilabError:  # ours (a MediaError, a missing package): one line already
            raise
        except Exception as exc:  # every store's client raises its own types
            # fsspec's HTTP filesystem turns any failed HEAD/GET into FileNotFoundError, with
            # the response's status on the cause: the status decides where there is one.
            status = status_of(exc)
            if status is None and _no_credentials(exc):
                # Retrying cannot help: the store's standard credential chain found nothing.
                raise MediaError(
                    MediaErrorCode.DENIED,
                    f"{shown}: no credentials found (set them the store's usual way: AWS "
                    "environment or profile, Google application default credentials, Azure "
                    "environment; or by bucket in [remote.buckets] of omnilab.toml)",
                    path=shown,
                ) from None
            if status is None and transient(exc) and attempt < _RETRIES:
                time.sleep(_BACKOFF_S * 2**attempt)
                continue
            if status is None and transient(exc):
                status = 503  # retried enough: reported as unreachable below
            if status in (401, 403) or (status is None and isinstance(exc, PermissionError)):
                why = f"HTTP {status}" if status else "check the credentials"
                raise MediaError(
                    MediaErrorCode.DENIED, f"{shown}: access denied ({why})", path=shown
                ) from None
            if status == 404 or (status is None and isinstance(exc, FileNotFoundError)):
                raise MediaError(
                    MediaErrorCode.NOT_FOUND, f"{shown} does not exist", path=shown
                ) from None
            if status is not None and 400 <= status < 500 and status not in (408, 429):
                raise MediaError(
                    MediaErrorCode.UNSUPPORTED,
                    f"{shown}: the store refused (HTTP {status})",
                    path=shown,
                ) from None
            if attempt == _RETRIES:
                # The library's message may hold the signed URL: only its type is shown.
                raise MediaError(
                    MediaErrorCode.UNREACHABLE,
                    f"{shown}: unreachable after {_RETRIES + 1} tries ({type(exc).__name__})",
                    path=shown,
                ) from None
            time.sleep(_BACKOFF_S * 2**attempt)
    raise AssertionError("unreachable")


def _no_credentials(exc: BaseException) -> bool:
    """botocore's NoCredentialsError (and the like of other stores' clients) in the chain."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        name = type(seen).__name__
        if "NoCredentials" in name or "CredentialRetrievalError" in name:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
