"""Inputs at URLs: fetched once into the media cache, by version, resumable, with one-line errors.

Against real servers on 127.0.0.1: moto's S3 server and a small HTTP server with byte ranges.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest
from remote_stores import http_store, s3_store

from omnilab.media import remote
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode


@pytest.fixture
def cache(tmp_path: Path) -> MediaCache:
    return MediaCache(tmp_path / "media", max_bytes=1 << 30)


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


def _blob(n: int, seed: int = 0) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}-{counter}".encode()).digest()
        counter += 1
    return bytes(out[:n])


def test_url_detection_and_public_form() -> None:
    assert remote.is_remote("s3://bucket/a.mp4")
    assert remote.is_remote("HTTPS://host/a.mp4")
    assert not remote.is_remote("videos/a.mp4")
    assert not remote.is_remote("/abs/a.mp4")
    assert not remote.is_remote("file:///abs/a.mp4")
    assert not remote.is_remote(Path("s3://bucket/a.mp4"))
    signed = "https://user:pw@host:8443/b/v.mp4?X-Amz-Signature=SECRET&X-Amz-Credential=AKIA#frag"
    assert remote.public_url(signed) == "https://host:8443/b/v.mp4"


def test_s3_fetch_once_then_from_the_cache(
    monkeypatch: pytest.MonkeyPatch, cache: MediaCache
) -> None:
    data = _blob(300_000)
    with s3_store(monkeypatch) as s3:
        s3.create_bucket(Bucket="media")
        s3.put_object(Bucket="media", Key="videos/clip.mp4", Body=data)
        first = remote.fetch("s3://media/videos/clip.mp4", cache=cache, chunk_bytes=64 << 10)
        assert first.path.read_bytes() == data
        assert first.downloaded == len(data)
        assert first.path.suffix == ".mp4"
        assert first.version.md5 == hashlib.md5(data).hexdigest()  # moto's single-part ETag
        assert oct(first.path.stat().st_mode & 0o777) == "0o600"
        again = remote.fetch("s3://media/videos/clip.mp4", cache=cache)
        assert again.path == first.path and again.downloaded == 0
    # The cache counts it like any entry (its size bound and LRU eviction cover it), and
    # leaves no partial file or range record behind.
    assert cache.stats().entries == 1 and cache.stats().bytes == len(data)
    assert not [p for p in cache.root.rglob("*") if ".tmp-" in p.name]


def test_a_changed_object_is_a_new_entry_and_a_resumed_run_notices(
    monkeypatch: pytest.MonkeyPatch, cache: MediaCache
) -> None:
    with s3_store(monkeypatch) as s3:
        s3.create_bucket(Bucket="media")
        s3.put_object(Bucket="media", Key="a.wav", Body=b"first version")
        old = remote.fetch("s3://media/a.wav", cache=cache)
        s3.put_object(Bucket="media", Key="a.wav", Body=b"second version!")
        new = remote.fetch("s3://media/a.wav", cache=cache)
        assert new.path != old.path and new.path.read_bytes() == b"second version!"
        assert new.version.tag != old.version.tag
        with pytest.raises(MediaError) as err:
            remote.fetch("s3://media/a.wav", cache=cache, expect=old.version)
    assert err.value.code is MediaErrorCode.CHANGED
    assert "s3://media/a.wav changed since this run first read it" in str(err.value)


def test_missing_objects_and_buckets_are_one_line(
    monkeypatch: pytest.MonkeyPatch, cache: MediaCache
) -> None:
    with s3_store(monkeypatch) as s3:
        s3.create_bucket(Bucket="media")
        for url in ("s3://media/nothing.mp4", "s3://no-such-bucket/a.mp4"):
            with pytest.raises(MediaError) as err:
                remote.fetch(url, cache=cache)
            assert err.value.code is MediaErrorCode.NOT_FOUND
            assert str(err.value) == f"{url} does not exist"
            assert "testing-secret-value" not in str(err.value)


def test_http_ranges_in_parallel_and_the_same_bytes(cache: MediaCache) -> None:
    data = _blob(1_000_000, seed=3)
    with http_store() as store:
        store.objects["v/long.mp4"] = data
        got = remote.fetch(store.url("v/long.mp4"), cache=cache, chunk_bytes=128 << 10, workers=4)
        ranges = sorted((s, e) for _, s, e in store.gets)
    assert got.path.read_bytes() == data
    assert len(ranges) == 8 and ranges[0] == (0, 128 << 10) and ranges[-1][1] == len(data)


def test_an_interrupted_download_resumes_where_it_stopped(cache: MediaCache) -> None:
    chunk = 64 << 10
    data = _blob(10 * chunk + 123, seed=5)
    with http_store() as store:
        store.objects["big.mp4"] = data
        store.fail_from = 4 * chunk  # the store goes away after four ranges
        with pytest.raises(MediaError) as err:
            remote.fetch(store.url("big.mp4"), cache=cache, chunk_bytes=chunk, workers=1)
        assert err.value.code is MediaErrorCode.UNREACHABLE
        assert cache.stats().entries == 0  # nothing half-made is ever an entry
        first_pass = list(store.gets)
        store.fail_from = None
        store.gets.clear()
        got = remote.fetch(store.url("big.mp4"), cache=cache, chunk_bytes=chunk, workers=1)
    assert got.path.read_bytes() == data
    assert got.downloaded == len(data) - 4 * chunk
    assert {s for _, s, _ in first_pass} == {0, chunk, 2 * chunk, 3 * chunk}
    assert min(s for _, s, _ in store.gets) == 4 * chunk  # nothing fetched twice


def test_concurrent_tasks_wait_for_one_download(cache: MediaCache) -> None:
    data = _blob(200_000, seed=7)
    with http_store() as store:
        store.objects["shared.mp4"] = data
        results: list[remote.Fetched] = []

        def task() -> None:
            results.append(remote.fetch(store.url("shared.mp4"), cache=cache))

        threads = [threading.Thread(target=task) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        gets = len(store.gets)
    assert gets == 1
    assert len({r.path for r in results}) == 1
    assert sorted(r.downloaded for r in results) == [0, 0, 0, len(data)]


def test_http_errors_name_the_url_without_its_signature(cache: MediaCache) -> None:
    with http_store() as store:
        store.objects["private.mp4"] = b"x"
        store.denied.add("private.mp4")
        signed = store.url("private.mp4", "X-Amz-Signature=SIGSECRET123&token=TOKSECRET")
        with pytest.raises(MediaError) as denied:
            remote.fetch(signed, cache=cache)
        with pytest.raises(MediaError) as missing:
            remote.fetch(store.url("gone.mp4", "sig=SIGSECRET123"), cache=cache)
    assert denied.value.code is MediaErrorCode.DENIED
    assert str(denied.value) == f"{store.url('private.mp4')}: access denied (HTTP 403)"
    assert missing.value.code is MediaErrorCode.NOT_FOUND
    for err in (denied.value, missing.value):
        assert "SECRET" not in str(err) and "SECRET" not in repr(err)
        assert "SECRET" not in str(err.path)


def test_an_unreachable_endpoint_is_retried_then_one_line(cache: MediaCache) -> None:
    from remote_stores import free_port

    url = f"http://127.0.0.1:{free_port()}/v.mp4?sig=SECRET"
    with pytest.raises(MediaError) as err:
        remote.fetch(url, cache=cache)
    assert err.value.code is MediaErrorCode.UNREACHABLE
    assert str(err.value).startswith(f"{remote.public_url(url)}: unreachable after 5 tries (")
    assert "SECRET" not in str(err.value)


def test_a_corrupt_transfer_is_refused(cache: MediaCache, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _blob(50_000, seed=9)
    with http_store() as store:
        store.objects["a.mp4"] = data
        real = remote._version

        def lying(info: dict[str, object]) -> remote.ObjectVersion:
            v = real(info)
            return remote.ObjectVersion(v.tag, v.size, "0" * 32)  # an MD5 the bytes cannot match

        monkeypatch.setattr(remote, "_version", lying)
        with pytest.raises(MediaError) as err:
            remote.fetch(store.url("a.mp4"), cache=cache)
    assert err.value.code is MediaErrorCode.CORRUPT
    assert cache.stats().entries == 0


def test_a_scheme_without_its_package_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, cache: MediaCache
) -> None:
    import builtins

    from omnilab.errors import OmnilabError

    real_import = builtins.__import__

    def no_gcsfs(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("gcsfs"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_gcsfs)
    with pytest.raises(OmnilabError) as err:
        remote.fetch("gs://bucket/a.mp4", cache=cache)
    assert str(err.value) == "reading gs:// URLs needs gcsfs: pip install 'omnilab[gcs]'"


def test_partial_files_are_private(cache: MediaCache) -> None:
    chunk = 64 << 10
    with http_store() as store:
        store.objects["p.mp4"] = _blob(3 * chunk, seed=11)
        store.fail_from = chunk
        with pytest.raises(MediaError):
            remote.fetch(store.url("p.mp4"), cache=cache, chunk_bytes=chunk, workers=1)
    parts = [p for p in cache.root.rglob("*") if ".tmp-part" in p.name]
    assert parts
    for p in parts:
        assert p.stat().st_mode & 0o077 == 0, p


def test_cache_show_lists_fetched_objects_without_their_signature() -> None:
    from typer.testing import CliRunner

    from omnilab.cli.main import app

    data = _blob(70_000, seed=13)
    with http_store() as store:
        store.objects["clips/a.mp4"] = data
        fetched = remote.fetch(store.url("clips/a.mp4", "sig=SECRETSIG"))  # the default cache
    listed = remote.cached_objects()
    assert [(o.url, o.size, o.path) for o in listed] == [
        (store.url("clips/a.mp4"), len(data), fetched.path)
    ]
    result = CliRunner().invoke(app, ["cache", "show", "--remote"])
    assert result.exit_code == 0, result.output
    assert "from URLs:   1 objects" in result.output
    assert store.url("clips/a.mp4") in result.output and "SECRETSIG" not in result.output
    as_json = CliRunner().invoke(app, ["cache", "show", "--json"])
    assert '"url": "' + store.url("clips/a.mp4") + '"' in as_json.output
    # An evicted object drops out of the list.
    fetched.path.unlink()
    assert remote.cached_objects() == []


def test_no_credentials_is_one_line_without_retries(
    monkeypatch: pytest.MonkeyPatch, cache: MediaCache, tmp_path: Path
) -> None:
    """A user with no AWS credentials got 'unreachable after 5 tries (NoCredentialsError)'."""
    with s3_store(monkeypatch) as s3:
        s3.create_bucket(Bucket="media")
        s3.put_object(Bucket="media", Key="a.mp4", Body=b"x")
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(key)
        empty = tmp_path / "no-aws"
        empty.mkdir()
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(empty / "config"))
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        calls = 0
        real_sleep = remote.time.sleep

        def counted(seconds: float) -> None:
            nonlocal calls
            calls += 1
            real_sleep(0)

        monkeypatch.setattr(remote.time, "sleep", counted)
        with pytest.raises(MediaError) as err:
            remote.fetch("s3://media/a.mp4", cache=cache)
    assert err.value.code is MediaErrorCode.DENIED
    assert str(err.value).startswith("s3://media/a.mp4: no credentials found")
    assert calls == 0
