"""A first fetch from S3 is one GET whose response also gives the object's version (issue 46's
cold-fetch cost: it was a HEAD, another HEAD inside s3fs's ``cat_file``, then the GET), with
every guarantee of the look-up-first path: one download per URL on a machine, the version
checked against a run's record, resume of a large object, a look-up first once a URL was seen.

Against moto's S3 server on 127.0.0.1; requests are counted at the S3 client's calls (botocore's
``before-call`` event; s3fs's ``_call_s3`` before S3 reads left s3fs)."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remote_stores import s3_store

from omnilab.media import remote
from omnilab.media._remote_s3 import s3_client
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode


@pytest.fixture
def cache(tmp_path: Path) -> MediaCache:
    return MediaCache(tmp_path / "media", max_bytes=1 << 30)


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with s3_store(monkeypatch) as client:
        client.create_bucket(Bucket="media")
        yield client


@pytest.fixture
def calls(s3: Any) -> Iterator[Counter[str]]:
    """Every request the S3 client sends, by operation (``head_object``, ``get_object``)."""
    from botocore import xform_name

    client = s3_client("s3://media/x")
    seen: Counter[str] = Counter()

    def counted(model: Any, **kwargs: Any) -> None:
        seen[xform_name(model.name)] += 1

    client.meta.events.register("before-call.s3", counted)
    yield seen
    client.meta.events.unregister("before-call.s3", counted)


def _blob(n: int, seed: int = 0) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}-{counter}".encode()).digest()
        counter += 1
    return bytes(out[:n])


def test_a_first_fetch_is_one_get_and_a_cache_hit_one_head(
    s3: Any, calls: Counter[str], cache: MediaCache
) -> None:
    data = _blob(300_000)
    s3.put_object(Bucket="media", Key="v/clip.mp4", Body=data)
    first = remote.fetch("s3://media/v/clip.mp4", cache=cache)
    assert calls == {"get_object": 1}
    assert first.path.read_bytes() == data and first.downloaded == len(data)
    assert first.version.md5 == hashlib.md5(data).hexdigest()
    # The GET's version is the one a look-up gives: the next fetch is a hit.
    calls.clear()
    again = remote.fetch("s3://media/v/clip.mp4", cache=cache)
    assert calls == {"head_object": 1}
    assert again.path == first.path and again.downloaded == 0
    assert again.version == first.version
    assert remote.stat_remote("s3://media/v/clip.mp4") == first.version
    # A changed object: looked up (the URL was seen), then one ranged GET (no HEAD of s3fs's).
    s3.put_object(Bucket="media", Key="v/clip.mp4", Body=data[::-1])
    calls.clear()
    new = remote.fetch("s3://media/v/clip.mp4", cache=cache)
    assert calls == {"head_object": 1, "get_object": 1}
    assert new.path.read_bytes() == data[::-1] and new.path != first.path
    assert not [p for p in cache.root.rglob("*") if ".tmp-" in p.name]


def test_a_large_object_s_first_range_comes_with_its_version_and_a_killed_download_resumes(
    s3: Any, calls: Counter[str], cache: MediaCache
) -> None:
    chunk = 64 << 10
    data = _blob(10 * chunk + 123, seed=2)
    s3.put_object(Bucket="media", Key="long.mp4", Body=data)

    class KilledError(Exception):
        pass

    def kill_after_four(done: int, total: int) -> None:
        if done >= 4 * chunk:
            raise KilledError

    with pytest.raises(KilledError):
        remote.fetch(
            "s3://media/long.mp4",
            cache=cache,
            chunk_bytes=chunk,
            workers=1,
            progress=kill_after_four,
        )
    assert calls == {"get_object": 4}  # the first range with the version, then three more
    assert cache.stats().entries == 0
    calls.clear()
    got = remote.fetch("s3://media/long.mp4", cache=cache, chunk_bytes=chunk, workers=3)
    assert got.path.read_bytes() == data
    assert got.downloaded == len(data) - 4 * chunk  # nothing fetched twice
    assert calls == {"head_object": 1, "get_object": 7}


def test_concurrent_first_fetches_of_one_object_download_it_once(
    s3: Any, calls: Counter[str], cache: MediaCache
) -> None:
    data = _blob(200_000, seed=3)
    s3.put_object(Bucket="media", Key="shared.mp4", Body=data)
    results: list[remote.Fetched] = []

    def task() -> None:
        results.append(remote.fetch("s3://media/shared.mp4", cache=cache))

    threads = [threading.Thread(target=task) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls["get_object"] == 1
    assert len({r.path for r in results}) == 1
    assert sorted(r.downloaded for r in results) == [0, 0, 0, len(data)]


def test_a_run_s_recorded_version_is_checked_on_a_first_fetch_too(
    s3: Any, calls: Counter[str], cache: MediaCache
) -> None:
    s3.put_object(Bucket="media", Key="a.wav", Body=b"first version")
    recorded = remote.stat_remote("s3://media/a.wav")
    s3.put_object(Bucket="media", Key="a.wav", Body=b"second version!")
    calls.clear()
    with pytest.raises(MediaError) as err:
        remote.fetch("s3://media/a.wav", cache=cache, expect=recorded)
    assert err.value.code is MediaErrorCode.CHANGED
    assert calls == {"get_object": 1}
    assert cache.stats().entries == 0


def test_an_empty_object_and_a_missing_one(s3: Any, calls: Counter[str], cache: MediaCache) -> None:
    s3.put_object(Bucket="media", Key="empty.txt", Body=b"")
    got = remote.fetch("s3://media/empty.txt", cache=cache)  # no range of it: looked up
    assert got.path.read_bytes() == b"" and got.version.size == 0
    with pytest.raises(MediaError) as err:
        remote.fetch("s3://media/none.mp4", cache=cache)
    assert err.value.code is MediaErrorCode.NOT_FOUND
    assert str(err.value) == "s3://media/none.mp4 does not exist"


def test_ranges_of_a_large_object_are_written_piece_by_piece_as_they_arrive(
    s3: Any, calls: Counter[str], cache: MediaCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.media import _remote_get

    chunk = 64 << 10
    data = _blob(5 * chunk + 777, seed=4)
    s3.put_object(Bucket="media", Key="long.mp4", Body=data)
    monkeypatch.setattr(_remote_get, "_PIECE", 10_000)  # pieces that straddle the ranges' ends
    got = remote.fetch("s3://media/long.mp4", cache=cache, chunk_bytes=chunk, workers=3)
    assert got.path.read_bytes() == data and got.downloaded == len(data)
    assert calls == {"get_object": 6}
