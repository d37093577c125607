"""Which keys a reply-cache file may hold, kept in memory by each process.

Every call of a new run misses the cache, and asking SQLite about a miss cost the event loop's
thread far more than the statement itself: the statement runs without the interpreter lock, and
at 64 tasks in flight the loop's thread then waited for the lock behind the run's other threads
(measured in a 1,000-task run: 0.34-0.40 s of wall time for 936 misses, 0.14-0.15 s of it CPU).
With the index, a miss is a set lookup; a key the index holds is still read from the file, so the
index can only make a lookup go to the file, never serve a reply by itself.

The index is loaded from the file at the first lookup, takes every store of this process at
once, and takes the rows other processes added (or a file made anew) when it is older than
:data:`REFRESH_S` at a lookup: a reply another process stored in the last half second may
be asked for again, which is what a cache miss means anyway. A file with more than
:data:`MAX_KEYS` rows is not indexed (loading it would hold up the loop): every lookup asks it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time

__all__ = ["MAX_KEYS", "REFRESH_S", "KeyIndex"]

REFRESH_S = 0.5
"""How old the index may be before a lookup first takes in what other processes stored. Each
refresh is a statement, which cost the event loop 2-8 ms of wall time at 64 tasks in flight
(the wait for the interpreter lock after it, mostly): every 0.1 s, that was 40 ms a run."""
MAX_KEYS = 100_000
"""Files with more rows are not indexed: loading 100,000 keys takes about 0.1 s here."""


class KeyIndex:
    """The keys one cache file may hold (by hash: a collision only costs a statement)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[int] = set()  # read from the file
        self._own: set[int] = set()  # stored by this process (kept across reloads)
        self._identity: tuple[int, int] | None = None
        self._top = 0  # the largest rowid taken in
        self._checked = float("-inf")
        self._complete = True  # false: the file has too many rows to index
        self._failed = False  # the last refresh could not read the file
        self._overflow = False  # this process stored more than MAX_KEYS: not indexed any more

    def stale(self) -> bool:
        """Whether the next lookup should :meth:`refresh` first."""
        return time.monotonic() - self._checked >= REFRESH_S

    def may_hold(self, key: str) -> bool:
        """False only when the file certainly lacks ``key`` (as of the last refresh)."""
        if not self._complete or self._failed or self._overflow:
            return True
        digest = hash(key)
        return digest in self._keys or digest in self._own

    def add(self, key: str) -> None:
        """A store of this process (written behind): held from now on."""
        self._own.add(hash(key))
        if len(self._own) > MAX_KEYS:
            # A long-lived process that stored this many: the set stops growing, and every
            # lookup asks the file from now on.
            self._overflow = True
            self._own.clear()

    def forget(self) -> None:
        """Every row removed (the cache cleared): nothing is held until the next refresh."""
        with self._lock:
            self._keys.clear()
            self._own.clear()
            self._top = 0

    def missing(self) -> None:
        """No file: nothing is held but what this process stored (its stores may still be on
        their way to the file the writer makes)."""
        with self._lock:
            self._keys.clear()
            self._identity, self._top = None, 0
            self._complete, self._failed = True, False
            self._checked = time.monotonic()

    def unreadable(self) -> None:
        """The file could not be read: lookups ask it (and say why) until the next refresh."""
        with self._lock:
            self._failed = True
            self._checked = time.monotonic()

    def refresh(self, conn: sqlite3.Connection, identity: tuple[int, int]) -> None:
        """Take in the rows added to the file (``conn`` reads it; ``identity`` is its device
        and inode) since the last refresh, or all of them for a file not seen before."""
        with self._lock:
            after = self._top if identity == self._identity else 0
            top, added = _keys_after(conn, after)
            if after and top < after:
                # Rows removed since: a cleared cache numbers its rows from 1 again.
                after = 0
                top, added = _keys_after(conn, 0)
            if after == 0:
                self._complete = len(added) <= MAX_KEYS
                self._keys = {hash(key) for key in added} if self._complete else set()
            elif self._complete:
                self._keys.update(hash(key) for key in added)
                if len(self._keys) > MAX_KEYS:
                    self._complete, self._keys = False, set()
            self._identity, self._top, self._failed = identity, top, False
            self._checked = time.monotonic()


def _keys_after(conn: sqlite3.Connection, after: int) -> tuple[int, list[str]]:
    """The file's largest rowid, and the keys of its rows after rowid ``after`` (at most
    :data:`MAX_KEYS` + 1 of them)."""
    limit = MAX_KEYS + 1
    try:
        # All in one step of one statement, the keys as a JSON array: SQLite runs each step
        # without the interpreter lock, and fetching a row at a time meant a hand-over of the
        # lock per key, each a wait behind the run's other threads (4-8 ms of wall time for
        # a few hundred keys).
        top, keys = conn.execute(
            "SELECT max(rowid), (SELECT json_group_array(key) FROM "
            "(SELECT key FROM responses WHERE rowid > ? LIMIT ?)) FROM responses",
            (after, limit),
        ).fetchone()
        return int(top or 0), list(json.loads(keys))
    except sqlite3.OperationalError as e:
        if "json_group_array" not in str(e):
            raise
        # An SQLite built without its JSON functions: the same, a row at a time.
        (top,) = conn.execute("SELECT max(rowid) FROM responses").fetchone()
        rows = conn.execute(
            "SELECT key FROM responses WHERE rowid > ? LIMIT ?", (after, limit)
        ).fetchall()
        return int(top or 0), [key for (key,) in rows]
