"""A response cache in SQLite, keyed by what the model is asked.

The key is a SHA-256 of canonical JSON: the model name, the messages with every media part
replaced by its content identity (inline bytes: SHA-256; files: the media cache's identity of size,
first and last MiB, so a renamed copy hits and an edited file misses), the tools, every
generation setting that can change the answer (sampling, seed, response format, logprobs; the
timeout is left out) and the sample index, so repeated samples of one prompt are separate
replies while a rerun of the same sample is served from the cache. One SQLite file serves
concurrent processes (WAL mode, busy timeout); each keeps the file's keys in memory
(:mod:`omnilab.models.cache_index`), so a miss costs no statement.

Stores are written behind: :meth:`ResponseCache.put` keeps the reply in memory (where
:meth:`~ResponseCache.get` finds it at once) and one background thread commits what has
gathered, many replies per transaction, so a store costs the event loop a dict insert instead of
a commit. What is still pending is written when the process exits normally, on
:meth:`~ResponseCache.flush` and :meth:`~ResponseCache.close`; a killed process loses at most
the last fraction of a second of replies, which only means asking for them again.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnilab._memo import IdentityMemo
from omnilab._ownfolders import private_folder
from omnilab.config import get_settings
from omnilab.content import Text
from omnilab.models.cache_index import KeyIndex
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec

__all__ = ["ResponseCache", "flush_pending", "request_key"]

log = logging.getLogger(__name__)

_KEY_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    output TEXT NOT NULL
)
"""


def _canonical_message(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, Text):
            parts.append(part.model_dump(mode="json"))
            continue
        # Imported here, for media parts only: the media package loads PyAV, which neither
        # importing the model layer nor a text-only run should pay for.
        from omnilab.media.cache import file_identity

        fields = part.model_dump(mode="json", exclude={"path", "data"}, exclude_none=True)
        if part.data is not None:
            fields["sha256"] = hashlib.sha256(part.data).hexdigest()
        else:
            assert part.path is not None
            fields["identity"] = file_identity(part.path)
        parts.append(fields)
    dumped = message.model_dump(mode="json", exclude={"content"})
    dumped["content"] = parts
    return dumped


# Settings added after the first key version: left out of the key while at their default, so
# caches written before they existed still answer the same requests.
_LATER_SETTINGS = {
    "response_format": None,
    "logprobs": False,
    "top_logprobs": None,
    "send_seed": True,
    "text_parts": False,
    "audio_url": False,
    "keep_think": False,
}


def request_key(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    config: GenerateConfig,
    *,
    sample: int | None = None,
) -> str:
    """The cache key of one request; ``sample`` is the index of a repeated sample (0 and None
    are the same first sample)."""
    settings = config.model_dump(mode="json", exclude={"timeout_s"})
    for name, default in _LATER_SETTINGS.items():
        if settings.get(name) == default:
            del settings[name]
    # The canonical JSON of {"config", "messages", "model", "sample"?, "tools", "v"} with sorted
    # keys, written part by part: the same text as dumping the whole dict (keys in sorted
    # order), with the tool list's part kept from the last call that offered the same tools.
    sampled = f',"sample":{_dump(sample)}' if sample else ""
    text = (
        f'{{"config":{_dump(settings)},'
        f'"messages":{_dump([_canonical_message(m) for m in messages])},'
        f'"model":{_dump(model)}{sampled},"tools":{_tools_text(tools)},"v":{_KEY_VERSION}}}'
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _dump(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# Agents offer the same spec objects on every call: their schemas are the largest part of a key.
_TOOL_TEXTS: IdentityMemo[str] = IdentityMemo()


def _tools_text(tools: Sequence[ToolSpec]) -> str:
    return _TOOL_TEXTS.get(tools, lambda: _dump([t.model_dump(mode="json") for t in tools]))


# Stores not yet committed, by cache file, shared by every ResponseCache object of this process
# on that file (a new object on the same file finds them too); one background thread writes
# them. Held strongly: a cache object dropped right after a store loses nothing.
_PENDING: dict[str, dict[str, tuple[str, float, str]]] = {}
_PENDING_LOCK = threading.Lock()
_WRITE_LOCKS: dict[str, threading.Lock] = {}
_INDEXES: dict[str, KeyIndex] = {}
_WRITERS: dict[str, ResponseCache] = {}
_WAKE = threading.Event()
_WRITER: dict[str, int | None] = {"pid": None}
_LINGER_S = 0.05
"""How long the writer waits after a store for more to commit with it."""
_ROWS_PER_INSERT = 200
"""Rows per INSERT: 800 parameters, under the 999 that older SQLite builds allow."""
_UNREADABLE: set[str] = set()
"""Cache files whose failed lookup was already reported."""
_UNWRITABLE: set[str] = set()
"""Cache files whose failed store was already reported (the writer fails again every batch)."""


def _writer_loop() -> None:
    while True:
        _WAKE.wait()
        time.sleep(_LINGER_S)  # gather the stores of the next moments into one commit
        _WAKE.clear()
        flush_pending()


def flush_pending() -> None:
    """Write every reply this process still holds for any cache file, now (the writer thread
    and the exit hook call it; so do workers about to be ended without exit hooks: a
    terminated pool process, a killed Ray actor)."""
    with _PENDING_LOCK:
        files = [name for name, rows in _PENDING.items() if rows]
    for name in files:
        writer = _WRITERS.get(name)
        if writer is None:
            writer = _WRITERS.setdefault(name, ResponseCache(Path(name)))
        writer.flush()


def _make_file(path: Path) -> None:
    """Make the cache file whole (WAL mode, the table) under another name, then link it into
    place unless a file is there by then (another writer's, which is kept).

    A reader never opens a file still being set up: one that did while a writer switched the
    new file to WAL got "database is locked", from its lookup and from the writer's commit.
    Where the file system has no hard links, the file is made in place as before.
    """
    private_folder(path.parent, what="cache_dir")
    fd, made = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".new")
    os.close(fd)
    try:
        conn = sqlite3.connect(made)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # kept in the file's header
            with conn:
                conn.execute(_SCHEMA)
        finally:
            conn.close()  # the last connection: its WAL is checkpointed and removed
        with contextlib.suppress(FileExistsError):
            os.link(made, path)
    except OSError as e:
        log.debug("reply cache %s: not made by a link (%s); made in place", path, e)
    finally:
        for leftover in ("", "-wal", "-shm"):
            Path(made + leftover).unlink(missing_ok=True)


def _lookup(conn: sqlite3.Connection, key: str) -> str | None:
    found = conn.execute("SELECT output FROM responses WHERE key = ?", (key,)).fetchone()
    return str(found[0]) if found is not None else None


def _ensure_writer() -> None:
    if _WRITER["pid"] == os.getpid():
        return
    with _PENDING_LOCK:
        if _WRITER["pid"] == os.getpid():
            return
        _WRITER["pid"] = os.getpid()  # a forked child starts its own writer
        threading.Thread(target=_writer_loop, name="omnilab-reply-cache", daemon=True).start()
        atexit.register(flush_pending)


class ResponseCache:
    """Model outputs by request key, in one SQLite file.

    Each thread (and each process: a fork does not inherit it) keeps one open connection, so a
    lookup costs a statement, not an open, a schema check and a close: at a 64-task concurrency
    the cache runs on the event loop a thousand times a run. Stores are written behind (see the
    module docstring). Commits are not synced to disk one by one (WAL with
    ``synchronous=NORMAL``): a power cut can lose the last replies, which only means asking
    again.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._init_state()

    def _init_state(self) -> None:
        self._local = threading.local()
        self._name = str(self.path.absolute())
        with _PENDING_LOCK:
            self._write_lock = _WRITE_LOCKS.setdefault(self._name, threading.Lock())
            self._index = _INDEXES.setdefault(self._name, KeyIndex())

    @classmethod
    def default(cls) -> ResponseCache:
        """The cache under ``cache_dir``/models."""
        return cls(get_settings().cache_dir / "models" / "responses.sqlite3")

    def __getstate__(self) -> dict[str, Any]:
        # Connections stay with the process that opened them (process backends pickle models);
        # replies not yet written are written by this process.
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._init_state()

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        """This thread's connection to the file as it is now; None if it does not exist and
        ``create`` is false. A file removed or replaced since (a cleared cache folder) gets a
        new connection, so nobody reads a deleted file's rows."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            if not create:
                return None
            _make_file(self.path)
            st = None
        held = self._held()
        if held is not None and st is not None and held[0] == (st.st_dev, st.st_ino):
            return held[1]
        self._drop()
        # Another user's folder (a shared cache) could hold a planted reply: refused.
        private_folder(self.path.parent, what="cache_dir")
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        with conn:
            conn.execute(_SCHEMA)
        st = self.path.stat()
        self._local.held = (os.getpid(), (st.st_dev, st.st_ino), conn)
        return conn

    def _held(self) -> tuple[tuple[int, int], sqlite3.Connection] | None:
        """This thread's open connection and its file's (device, inode), when this process
        opened it (a forked child does not use its parent's)."""
        held = getattr(self._local, "held", None)
        if held is None or held[0] != os.getpid():
            return None
        return held[1], held[2]

    def _drop(self) -> None:
        """Forget this thread's connection, closing it if this process opened it."""
        held = self._held()
        self._local.held = None
        if held is not None:
            held[1].close()

    def get(self, key: str) -> ModelOutput | None:
        """The stored output for ``key``, or None."""
        with _PENDING_LOCK:
            row = _PENDING.get(self._name, {}).get(key)
        if row is not None:
            return ModelOutput.model_validate_json(row[2])
        if self._index.stale():
            self._refresh_index()
        if not self._index.may_hold(key):
            return None  # most lookups (every call of a new run): no statement at all
        # Asked of the connection already open, unchecked: a key the index holds may still be
        # missing (removed since), and a miss needs no look at the file. A row found is served
        # only from the file as it is now, so a cache whose folder was removed never answers; a
        # file made again since is read after the next hit or a store by this thread (a miss
        # meanwhile only means asking again).
        held = self._held()
        opened = held[1] if held is not None else None
        try:
            conn = opened or self._connection(create=False)
            if conn is None:
                return None
            found = _lookup(conn, key)
            if found is not None and conn is opened:
                current = self._connection(create=False)
                if current is not conn:
                    found = _lookup(current, key) if current is not None else None
        except (OSError, sqlite3.Error) as e:
            # An unreadable cache (a damaged file, a full or read-only disk) only means asking
            # the model: said once per file, never raised into the model call.
            if self._name not in _UNREADABLE:
                _UNREADABLE.add(self._name)
                log.warning(
                    "reply cache %s cannot be read (%s); asking the model (delete the file to "
                    "start a new cache)",
                    self.path,
                    e,
                )
            return None
        return ModelOutput.model_validate_json(found) if found is not None else None

    def _refresh_index(self) -> None:
        """Bring the key index up to the file as it is now (see :mod:`.cache_index`)."""
        try:
            # The connection to the file as it is now; _held() then names that file.
            held = self._held() if self._connection(create=False) is not None else None
            if held is None:
                self._index.missing()
            else:
                self._index.refresh(held[1], held[0])
        except (OSError, sqlite3.Error):
            self._index.unreadable()  # the lookup itself says what is wrong

    def put(self, key: str, model: str, output: ModelOutput) -> None:
        """Store ``output`` under ``key`` (replacing any earlier one); written behind."""
        row = (model, time.time(), output.model_dump_json())
        with _PENDING_LOCK:
            _PENDING.setdefault(self._name, {})[key] = row
        self._index.add(key)
        _ensure_writer()
        _WAKE.set()

    def flush(self) -> None:
        """Write every pending store now (in this thread)."""
        with self._write_lock:  # one batch at a time: a later store is never overwritten
            with _PENDING_LOCK:
                batch = dict(_PENDING.get(self._name, {}))
            if not batch:
                return
            try:
                conn = self._connection(create=True)
                assert conn is not None
                rows = [(key, *row) for key, row in batch.items()]
                with conn:
                    # Many rows per statement: SQLite runs each statement without the
                    # interpreter lock, and executemany ran one per row, so each reply cost
                    # the event loop's thread a hand-over of the lock (at 64 tasks in flight,
                    # a dozen thread wake-ups per reply).
                    for start in range(0, len(rows), _ROWS_PER_INSERT):
                        chunk = rows[start : start + _ROWS_PER_INSERT]
                        conn.execute(
                            "INSERT OR REPLACE INTO responses (key, model, created, output) "
                            "VALUES " + ",".join(["(?, ?, ?, ?)"] * len(chunk)),
                            [value for row in chunk for value in row],
                        )
            except (OSError, sqlite3.Error) as e:
                # Losing cached replies only means asking again: say so once per file (a
                # damaged file fails every batch of the run), never stop the run.
                first = self._name not in _UNWRITABLE
                _UNWRITABLE.add(self._name)
                log.log(
                    logging.WARNING if first else logging.DEBUG,
                    "reply cache %s: %d replies not stored (%s)%s",
                    self.path,
                    len(batch),
                    e,
                    "; later failures are not reported (delete the file to start a new cache)"
                    if first
                    else "",
                )
            with _PENDING_LOCK:
                pending = _PENDING.get(self._name, {})
                for key, row in batch.items():
                    if pending.get(key) is row:
                        del pending[key]

    def __len__(self) -> int:
        self.flush()
        conn = self._connection(create=False)
        if conn is None:
            return 0
        (count,) = conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def clear(self) -> None:
        """Remove every stored response."""
        with _PENDING_LOCK:
            _PENDING.pop(self._name, None)
        conn = self._connection(create=False)
        if conn is not None:
            with conn:
                conn.execute("DELETE FROM responses")
        self._index.forget()

    def close(self) -> None:
        """Write pending stores and close this thread's connection (it reopens on the next
        use)."""
        self.flush()
        self._drop()
