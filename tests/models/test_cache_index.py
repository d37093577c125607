"""The reply cache's in-memory key index: a miss costs no statement, and what other processes
store is still found (after at most a refresh interval)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from omnilab.models import ModelOutput, ResponseCache, cache_index


def _store_elsewhere(path: Path, *keys: str, clear: bool = False) -> None:
    """Rows written as another process writes them: its own connection, not this process's
    cache objects (which tell the index of their own stores)."""
    conn = sqlite3.connect(path)
    with conn:
        if clear:
            conn.execute("DELETE FROM responses")
        for key in keys:
            output = ModelOutput.from_text(f"reply to {key}").model_dump_json()
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, created, output) "
                "VALUES (?, 'm', 0, ?)",
                (key, output),
            )
    conn.close()


def _text(cache: ResponseCache, key: str) -> str | None:
    found = cache.get(key)
    return None if found is None else found.text


@pytest.fixture()
def cache(tmp_path: Path) -> ResponseCache:
    made = ResponseCache(tmp_path / "c" / f"responses-{time.monotonic_ns()}.sqlite3")
    made.put("mine", "m", ModelOutput.from_text("my reply"))
    made.flush()
    return made


def test_rows_another_process_adds_are_found_once_the_index_is_refreshed(
    cache: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_index, "REFRESH_S", 3600.0)
    assert _text(cache, "theirs") is None  # the index is loaded here
    _store_elsewhere(cache.path, "theirs")
    assert _text(cache, "theirs") is None  # within the refresh interval: asked again
    monkeypatch.setattr(cache_index, "REFRESH_S", 0.0)
    assert _text(cache, "theirs") == "reply to theirs"
    assert _text(cache, "mine") == "my reply"


def test_a_real_other_process_store_is_found_after_the_default_interval(
    cache: ResponseCache,
) -> None:
    assert _text(cache, "child") is None
    code = (
        "import sys; from pathlib import Path; from omnilab.models import ModelOutput, "
        "ResponseCache; c = ResponseCache(Path(sys.argv[1])); "
        "c.put('child', 'm', ModelOutput.from_text('from the child')); c.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(cache.path)], check=True)
    time.sleep(cache_index.REFRESH_S)
    assert _text(cache, "child") == "from the child"


def test_a_cache_cleared_and_refilled_elsewhere_is_indexed_again(
    cache: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store_elsewhere(cache.path, "a", "b", "c")
    monkeypatch.setattr(cache_index, "REFRESH_S", 0.0)
    assert _text(cache, "c") == "reply to c"
    # Cleared and refilled with fewer rows: its row numbers start again from 1.
    _store_elsewhere(cache.path, "fresh", clear=True)
    assert _text(cache, "fresh") == "reply to fresh"
    assert _text(cache, "a") is None and _text(cache, "mine") is None


def test_own_stores_stay_found_after_they_are_written_without_a_refresh(
    cache: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _text(cache, "nothing") is None
    monkeypatch.setattr(cache_index, "REFRESH_S", 3600.0)
    cache.put("later", "m", ModelOutput.from_text("stored later"))
    cache.flush()  # no longer pending: found through the index and the file
    assert _text(cache, "later") == "stored later"
    # Another object on the same file (another model of this process) shares the index.
    assert _text(ResponseCache(cache.path), "later") == "stored later"


def test_a_file_too_large_to_index_is_asked_on_every_lookup(
    cache: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_index, "MAX_KEYS", 2)
    _store_elsewhere(cache.path, "a", "b")
    monkeypatch.setattr(cache_index, "REFRESH_S", 0.0)
    assert _text(cache, "a") == "reply to a"  # three rows: not indexed
    monkeypatch.setattr(cache_index, "REFRESH_S", 3600.0)
    held = cache._held()
    assert held is not None
    statements: list[str] = []
    held[1].set_trace_callback(statements.append)
    _store_elsewhere(cache.path, "unseen")
    assert _text(cache, "unseen") == "reply to unseen"  # no index to miss it
    assert _text(cache, "absent") is None and len(statements) == 2


def test_a_cache_made_anew_under_the_same_name_is_read_whole(
    cache: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _text(cache, "mine") == "my reply"
    cache.path.unlink()
    assert not cache.path.exists()
    monkeypatch.setattr(cache_index, "REFRESH_S", 0.0)
    assert _text(cache, "mine") is None  # no file: nothing held
    other = ResponseCache(cache.path)
    other.put("seed", "m", ModelOutput.from_text("x"))
    other.flush()
    _store_elsewhere(cache.path, "new")
    assert _text(cache, "new") == "reply to new"


class _NoJson(sqlite3.Connection):
    """A connection to an SQLite built without its JSON functions."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if "json_group_array" in sql:
            raise sqlite3.OperationalError("no such function: json_group_array")
        return super().execute(sql, parameters)


def test_an_sqlite_without_json_functions_is_read_a_row_at_a_time(
    cache: ResponseCache,
) -> None:
    _store_elsewhere(cache.path, "a", "b")
    conn = sqlite3.connect(cache.path, factory=_NoJson)
    index = cache_index.KeyIndex()
    index.refresh(conn, (1, 1))
    assert all(index.may_hold(k) for k in ("a", "b", "mine")) and not index.may_hold("c")
    _store_elsewhere(cache.path, "c")
    index.refresh(conn, (1, 1))
    assert index.may_hold("c") and not index.may_hold("d")
    conn.close()


def test_a_store_made_before_the_file_exists_is_found_once_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ResponseCache(tmp_path / "fresh" / "responses.sqlite3")
    cache.put("early", "m", ModelOutput.from_text("stored early"))  # pending: no file yet
    monkeypatch.setattr(cache_index, "REFRESH_S", 0.0)
    # Refreshed while the writer has not made the file yet (it waits a moment for more).
    assert _text(cache, "other") is None
    monkeypatch.setattr(cache_index, "REFRESH_S", 3600.0)
    cache.flush()  # the file is made and the store leaves the pending ones
    assert _text(cache, "early") == "stored early"
    # The same, on the index alone (the writer above might have been quicker).
    index = cache_index.KeyIndex()
    index.add("early")
    index.missing()
    assert index.may_hold("early") and not index.may_hold("other")


def test_a_process_that_stored_more_than_the_cap_stops_indexing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cache_index, "MAX_KEYS", 3)
    index = cache_index.KeyIndex()
    for key in ("a", "b", "c"):
        index.add(key)
    assert not index.may_hold("unseen")
    index.add("d")  # the fourth: the set would pass the cap
    assert index.may_hold("unseen") and index.may_hold("a")
