"""A response cache in SQLite, keyed by what the model is asked.

The key is a SHA-256 of canonical JSON: the model name, the messages with every media part
replaced by its content identity (inline bytes: SHA-256; files: the media cache's identity of size,
first and last MiB, so a renamed copy hits and an edited file misses), the tools, every
generation setting that can change the answer (sampling, seed, response format, logprobs; the
timeout is left out) and the sample index, so repeated samples of one prompt are separate
replies while a rerun of the same sample is served from the cache. One SQLite file serves
concurrent processes (WAL mode, busy timeout).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnilab.config import get_settings
from omnilab.content import Text
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec

__all__ = ["ResponseCache", "request_key"]

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
_LATER_SETTINGS = {"response_format": None, "logprobs": False, "top_logprobs": None}


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
    canon: dict[str, Any] = {
        "v": _KEY_VERSION,
        "model": model,
        "messages": [_canonical_message(m) for m in messages],
        "tools": [t.model_dump(mode="json") for t in tools],
        "config": settings,
    }
    if sample:
        canon["sample"] = sample
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """Model outputs by request key, in one SQLite file.

    Each thread (and each process: a fork does not inherit it) keeps one open connection, so a
    lookup or a store costs a statement, not an open, a schema check and a close: at a 64-task
    concurrency the cache runs on the event loop a thousand times a run. Commits are not synced
    to disk one by one (WAL with ``synchronous=NORMAL``): a power cut can lose the last replies,
    which only means asking again, and a store no longer waits on the disk under load.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    @classmethod
    def default(cls) -> ResponseCache:
        """The cache under ``cache_dir``/models."""
        return cls(get_settings().cache_dir / "models" / "responses.sqlite3")

    def __getstate__(self) -> dict[str, Any]:
        # Connections stay with the process that opened them (process backends pickle models).
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._local = threading.local()

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        """This thread's connection to the file as it is now; None if it does not exist and
        ``create`` is false. A file removed or replaced since (a cleared cache folder) gets a
        new connection, so nobody reads a deleted file's rows."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            if not create:
                return None
            st = None
        held = getattr(self._local, "held", None)
        if held is not None and st is not None:
            pid, ident, conn = held
            if pid == os.getpid() and ident == (st.st_dev, st.st_ino):
                return conn  # type: ignore[no-any-return]
        if held is not None:
            self._local.held = None
            if held[0] == os.getpid():
                held[2].close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        with conn:
            conn.execute(_SCHEMA)
        st = self.path.stat()
        self._local.held = (os.getpid(), (st.st_dev, st.st_ino), conn)
        return conn

    def get(self, key: str) -> ModelOutput | None:
        """The stored output for ``key``, or None."""
        conn = self._connection(create=False)
        if conn is None:
            return None
        row = conn.execute("SELECT output FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return ModelOutput.model_validate_json(row[0])

    def put(self, key: str, model: str, output: ModelOutput) -> None:
        """Store ``output`` under ``key`` (replacing any earlier one)."""
        conn = self._connection(create=True)
        assert conn is not None
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, created, output) VALUES (?, ?, ?, ?)",
                (key, model, time.time(), output.model_dump_json()),
            )

    def __len__(self) -> int:
        conn = self._connection(create=False)
        if conn is None:
            return 0
        (count,) = conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def clear(self) -> None:
        """Remove every stored response."""
        conn = self._connection(create=False)
        if conn is not None:
            with conn:
                conn.execute("DELETE FROM responses")

    def close(self) -> None:
        """Close this thread's connection (it reopens on the next use)."""
        held = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None and held[0] == os.getpid():
            held[2].close()
