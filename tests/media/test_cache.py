"""MediaCache: content keys, write-once, atomic writes, LRU eviction, many processes, location."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from multiprocessing.synchronize import Barrier as BarrierType
from pathlib import Path

import pytest

from omnilab.config import get_settings
from omnilab.media import MediaCache
from omnilab.media import cache as cache_module

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB: large enough that a torn write would show


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "movie.mp4"
    path.parent.mkdir()
    path.write_bytes(b"A" * 5000)
    return path


@pytest.fixture()
def cache(tmp_path: Path) -> MediaCache:
    return MediaCache(tmp_path / "c", max_bytes=10_000_000)


def _rewrite(path: Path, data: bytes) -> None:
    # Real edits land later than the original write; make that explicit so the identity sees it.
    st = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_key_depends_on_content_op_and_params(cache: MediaCache, source: Path) -> None:
    base = cache.key(source, "frames", {"t": 1.0, "max_edge": 320})
    assert cache.key(source, "frames", {"max_edge": 320, "t": 1.0}) == base  # order is irrelevant
    assert cache.key(source, "clip", {"t": 1.0, "max_edge": 320}) != base
    assert cache.key(source, "frames", {"t": 1.5, "max_edge": 320}) != base
    assert cache.key(source, "frames", {"t": 1.0, "max_edge": None}) != base

    _rewrite(source, b"B" * 5000)  # same size, different bytes
    changed = cache.key(source, "frames", {"t": 1.0, "max_edge": 320})
    assert changed != base
    _rewrite(source, b"B" * 5001)  # one byte appended
    assert cache.key(source, "frames", {"t": 1.0, "max_edge": 320}) not in (base, changed)


def test_key_sees_edits_in_the_tail_of_large_files(cache: MediaCache, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    data = bytearray(3 * 1024 * 1024)
    big.write_bytes(data)
    before = cache.key(big, "op", {})
    data[-10] = 1
    _rewrite(big, bytes(data))
    assert cache.key(big, "op", {}) != before


def test_key_survives_rename_and_copy(cache: MediaCache, source: Path, tmp_path: Path) -> None:
    key = cache.key(source, "audio", {"start": 0.0})
    copy = Path(shutil.copy(source, tmp_path / "copy.mkv"))
    assert cache.key(copy, "audio", {"start": 0.0}) == key
    moved = source.rename(tmp_path / "renamed.bin")
    assert cache.key(moved, "audio", {"start": 0.0}) == key


def test_get_or_create_produces_once(cache: MediaCache, source: Path) -> None:
    calls: list[Path] = []

    def produce(tmp: Path) -> None:
        calls.append(tmp)
        tmp.write_bytes(PAYLOAD)

    key = cache.key(source, "op", {})
    assert cache.get(key, ".bin") is None
    first = cache.get_or_create(key, ".bin", produce)
    second = cache.get_or_create(key, ".bin", produce)
    assert first == second == cache.path_for(key, ".bin")
    assert first.read_bytes() == PAYLOAD
    assert len(calls) == 1
    # The producer writes next to the entry, under a name that keeps the suffix for encoders.
    assert calls[0].parent == first.parent and calls[0].suffix == ".bin"
    assert cache.get(key, ".bin") == first
    assert cache.size() == len(PAYLOAD)


def test_failing_producer_leaves_nothing(cache: MediaCache, source: Path) -> None:
    def produce(tmp: Path) -> None:
        tmp.write_bytes(PAYLOAD[:1000])  # a partial write, then a crash
        raise RuntimeError("encoder died")

    key = cache.key(source, "op", {})
    with pytest.raises(RuntimeError, match="encoder died"):
        cache.get_or_create(key, ".mp4", produce)
    assert cache.get(key, ".mp4") is None
    assert _data_files(cache.root) == []

    # A later good producer still fills the entry.
    path = cache.get_or_create(key, ".mp4", lambda tmp: tmp.write_bytes(b"ok"))
    assert path.read_bytes() == b"ok"


def _age(path: Path, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    os.utime(path, (t, t))


def test_eviction_keeps_recently_used(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "_GRACE_SECONDS", 0.0)
    cache = MediaCache(tmp_path / "c", max_bytes=250)
    keys = {name: cache.key(source, name, {}) for name in "abc"}
    a = cache.get_or_create(keys["a"], ".bin", lambda t: t.write_bytes(b"a" * 100))
    b = cache.get_or_create(keys["b"], ".bin", lambda t: t.write_bytes(b"b" * 100))
    _age(a, 100)
    _age(b, 50)
    assert cache.get(keys["a"], ".bin") == a  # a hit makes a the most recently used
    c = cache.get_or_create(keys["c"], ".bin", lambda t: t.write_bytes(b"c" * 100))
    assert a.exists() and c.exists()
    assert not b.exists()
    assert cache.size() == 200


def test_eviction_removes_oldest_first_until_within_bound(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "_GRACE_SECONDS", 0.0)
    cache = MediaCache(tmp_path / "c", max_bytes=10_000)
    paths = []
    for i in range(5):
        key = cache.key(source, "op", {"i": i})
        paths.append(cache.get_or_create(key, ".bin", lambda t: t.write_bytes(b"x" * 3000)))
        _age(paths[-1], 100 - i)  # older index, older use
    cache.max_bytes = 6500
    cache.evict()
    assert [p.exists() for p in paths] == [False, False, False, True, True]
    assert cache.size() == 6000


def test_grace_period_protects_fresh_entries(tmp_path: Path, source: Path) -> None:
    assert cache_module._GRACE_SECONDS >= 1.0
    cache = MediaCache(tmp_path / "c", max_bytes=100)
    paths = [
        cache.get_or_create(
            cache.key(source, "op", {"i": i}), ".bin", lambda t: t.write_bytes(b"x" * 80)
        )
        for i in range(3)
    ]
    # Over the bound, but every entry was just handed out, so none may disappear yet.
    assert all(p.exists() for p in paths)
    assert cache.size() == 240


def test_stale_temporary_files_are_collected(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "_GRACE_SECONDS", 0.0)
    cache = MediaCache(tmp_path / "c", max_bytes=0)
    entry = cache.get_or_create(cache.key(source, "op", {}), ".bin", lambda t: t.write_bytes(b"1"))
    crashed = entry.with_name(f"{entry.stem}.tmp-dead.bin")
    fresh = entry.with_name(f"{entry.stem}.tmp-live.bin")
    crashed.write_bytes(b"partial")
    fresh.write_bytes(b"partial")
    _age(crashed, 2 * 3600)
    cache.evict()
    assert not crashed.exists()
    assert fresh.exists()  # another writer may still be producing it
    assert not entry.exists()  # max_bytes=0: every complete entry past the grace period goes


def test_stale_lock_files_are_collected_once_a_minute(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "_LOCKS_SWEPT", {})
    cache = MediaCache(tmp_path / "c", max_bytes=1 << 20)
    cache.get_or_create(cache.key(source, "op", {}), ".bin", lambda t: t.write_bytes(b"1"))
    locks = cache.root / ".locks"
    old, older = locks / "old.lock", locks / "older.lock"
    old.touch()
    _age(old, 2 * 3600)
    monkeypatch.setattr(cache_module, "_LOCKS_SWEPT", {})  # a new process
    cache.evict()
    assert not old.exists()
    older.touch()
    _age(older, 2 * 3600)
    cache.evict()  # within the minute: the lock folder is not looked through again
    assert older.exists()
    monkeypatch.setattr(
        cache_module, "_LOCKS_SWEPT", {k: v - 61 for k, v in cache_module._LOCKS_SWEPT.items()}
    )
    cache.evict()
    assert not older.exists()


def test_clear(cache: MediaCache, source: Path) -> None:
    for i in range(3):
        cache.get_or_create(
            cache.key(source, "op", {"i": i}), ".bin", lambda t: t.write_bytes(b"z")
        )
    assert cache.size() == 3
    cache.clear()
    assert cache.size() == 0


def _data_files(root: Path) -> list[Path]:
    """Everything in the cache but its lock files (which stay by design: see cache.py)."""
    return [p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".lock")]


def _worker(root: str, source: str, out_dir: str, barrier: BarrierType) -> None:
    cache = MediaCache(Path(root), max_bytes=10_000_000)
    key = cache.key(Path(source), "slow", {"n": 1})
    me = Path(out_dir) / str(os.getpid())

    def produce(tmp: Path) -> None:
        me.with_suffix(".produced").touch()
        with tmp.open("wb") as out:
            for i in range(0, len(PAYLOAD), 64 * 1024):
                out.write(PAYLOAD[i : i + 64 * 1024])
                time.sleep(0.002)  # slow enough that the writers overlap

    barrier.wait()
    me.with_suffix(".result").write_text(str(cache.get_or_create(key, ".bin", produce)))


def test_concurrent_processes_end_with_one_complete_file(tmp_path: Path, source: Path) -> None:
    # spawn, not fork: by now the test process may run native thread pools (onnxruntime, ...),
    # and a forked child can inherit one of their locks held, then hang on it.
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    root, out_dir = tmp_path / "shared", tmp_path / "workers"
    out_dir.mkdir()
    procs = [
        ctx.Process(target=_worker, args=(str(root), str(source), str(out_dir), barrier))
        for _ in range(4)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=60)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    results = {p.read_text() for p in out_dir.glob("*.result")}
    assert len(results) == 1
    entry = Path(results.pop())
    assert entry.read_bytes() == PAYLOAD
    assert _data_files(root) == [entry]  # no temporary files left by any writer
    # The per-key lock makes exactly one process do the work; the others wait and hit.
    assert len(list(out_dir.glob("*.produced"))) == 1


def test_default_location_follows_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert MediaCache.default().root == tmp_path / "cache" / "media"  # set by conftest
    assert MediaCache.default().max_bytes == 2 * 1024**3

    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("OMNILAB_MEDIA__CACHE_MAX_BYTES", "12345")
    get_settings.cache_clear()
    cache = MediaCache.default()
    assert cache.root == tmp_path / "elsewhere" / "media"
    assert cache.max_bytes == 12345
