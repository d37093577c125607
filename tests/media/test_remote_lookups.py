"""How often a fetch asks the store for an object's version (issue 46's cold-fetch cost): once
when the downloaded bytes match the store's MD5, again only to tell a changed object from bad
bytes or where the store gives no MD5."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from remote_stores import http_store

from omnilab.media import remote
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode


@pytest.fixture
def cache(tmp_path: Path) -> MediaCache:
    return MediaCache(tmp_path / "media", max_bytes=1 << 30)


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every version look-up a fetch makes (each store answer is read by ``_version``)."""
    seen: list[str] = []
    real = remote._version

    def counted(info: Mapping[str, Any]) -> remote.ObjectVersion:
        version = real(info)
        seen.append(version.tag)
        return version

    monkeypatch.setattr(remote, "_version", counted)
    yield seen


def _blob(n: int) -> bytes:
    return hashlib.sha256(b"x").digest() * (n // 32)


def test_a_download_matching_its_md5_looks_the_object_up_once(
    cache: MediaCache, lookups: list[str]
) -> None:
    data = _blob(300_000)
    with http_store() as store:
        store.objects["v.mp4"] = data
        got = remote.fetch(store.url("v.mp4"), cache=cache, chunk_bytes=64 << 10, workers=2)
        assert got.version.md5 == hashlib.md5(data).hexdigest()  # the server's ETag
        assert got.path.read_bytes() == data
        assert len(lookups) == 1
        store.objects["w.mp4"] = data[:1000]  # one range
        remote.fetch(store.url("w.mp4"), cache=cache)
        assert len(lookups) == 2
    assert not [p for p in cache.root.rglob("*") if ".tmp-" in p.name]


def test_an_object_changed_mid_download_is_still_told_from_bad_bytes(
    cache: MediaCache, lookups: list[str]
) -> None:
    data = _blob(300_000)
    with http_store() as store:
        store.objects["v.mp4"] = data

        def swap(done: int, total: int) -> None:
            # After the first range: the object is replaced (same size, other bytes).
            store.objects["v.mp4"] = bytes(reversed(data))

        with pytest.raises(MediaError) as err:
            remote.fetch(
                store.url("v.mp4"), cache=cache, chunk_bytes=64 << 10, workers=1, progress=swap
            )
    assert err.value.code is MediaErrorCode.CHANGED
    assert "changed while it was being downloaded" in str(err.value)
    assert len(lookups) == 2
    assert cache.stats().entries == 0


def test_concurrent_cold_fetches_share_eviction_scans_and_the_last_sees_every_entry(
    cache: MediaCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans: list[int] = []
    real_evict = MediaCache.evict

    def slow_evict(self: MediaCache) -> None:
        scans.append(self.stats().entries)  # what this scan counts
        time.sleep(0.3)
        real_evict(self)

    monkeypatch.setattr(MediaCache, "evict", slow_evict)
    with http_store() as store:
        for i in range(8):
            store.objects[f"v{i}.mp4"] = _blob(64_000) + bytes([i])
        with ThreadPoolExecutor(8) as pool:
            got = list(
                pool.map(lambda i: remote.fetch(store.url(f"v{i}.mp4"), cache=cache), range(8))
            )
    assert all(g.downloaded for g in got)
    assert 1 <= len(scans) <= 4, scans  # not one scan per fetch
    assert scans[-1] == 8  # some scan began after the last entry landed
