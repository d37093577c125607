"""Which uid a live sandbox runs under: leases from one locked table shared by every omnilab
process of the machine (a run's workers, parallel runs), so no two live workspaces share a uid.

A uid is leased per workspace: the interpreter and the shell of one task share their workspace
and so their uid (both write its files); different workspaces never do while both are leased.
A lease names its holder (pid and start time), so leases of a crashed harness are reclaimed by
the next caller. The ``on_first`` / ``on_last`` hooks run under the lock when a workspace gets
its first live lease or loses its last one (mounting and unmounting its tmpfs, killing what the
freed uid left running).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnilab.sandbox._statedir import own_folder
from omnilab.sandbox._types import SandboxError
from omnilab.sandbox._uidcheck import SPAN, UidCheck

__all__ = ["Lease", "acquire", "live_leases", "release", "state_dir"]

_SPAN = SPAN
Hook = Callable[[str, int], "list[str] | None"]
"""Runs for a workspace and its uid; returns what went wrong (one line each) or None."""


@dataclass(frozen=True)
class Lease:
    """One sandbox's claim on a uid for its workspace."""

    uid: int
    workspace: str
    id: str
    problems: list[str] = field(default_factory=list, compare=False)
    """What the hooks of taking this lease reported (releasing other, dead holders' workspaces):
    for the warnings of the first result, never swallowed."""


def state_dir() -> Path:
    """The table's folder, private to this user and in memory where possible (it is rewritten
    at every sandbox start), made and checked on first use (see :func:`._statedir.own_folder`):
    ``/run/omnilab`` for root where /run is a tmpfs only root can write, else the user's
    runtime folder (``$XDG_RUNTIME_DIR``) when it is theirs, else a folder in ``/dev/shm`` or the
    temporary directory (sandboxes get private ones of those)."""
    return own_folder()


def _open_dir() -> Path:
    return state_dir()


@contextlib.contextmanager
def _locked() -> Iterator[tuple[list[dict[str, Any]], Path]]:
    folder = _open_dir()
    fd = os.open(folder / "uids.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        table = folder / "uids.json"
        try:
            leases = list(json.loads(table.read_text()))
        except (OSError, ValueError):
            leases = []
        yield leases, table
    finally:
        os.close(fd)  # releases the lock


def _write(table: Path, leases: list[dict[str, Any]]) -> None:
    tmp = table.with_name(f".uids-{uuid.uuid4().hex}")
    tmp.write_text(json.dumps(leases))
    tmp.replace(table)


def _start_time(pid: int) -> str | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()[19].decode()


def _alive(lease: dict[str, Any]) -> bool:
    return _start_time(int(lease["pid"])) == str(lease["start"])


def _run_hook(hook: Hook, ws: str, uid: int, problems: list[str]) -> None:
    """Runs ``hook``; what it reports or raises goes into ``problems`` (the table must still
    be written, so nothing propagates)."""
    try:
        problems += hook(ws, uid) or []
    except Exception as exc:
        problems.append(f"releasing workspace {ws} failed: {type(exc).__name__}: {exc}")


def _reap(
    leases: list[dict[str, Any]], on_last: Hook | None, problems: list[str]
) -> list[dict[str, Any]]:
    """Drops the leases of dead holders, running ``on_last`` for workspaces they leave free."""
    live = [lease for lease in leases if _alive(lease)]
    held = {lease["ws"] for lease in live}
    for lease in leases:
        if lease["ws"] not in held and on_last is not None:
            held.add(lease["ws"])  # once per workspace
            _run_hook(on_last, lease["ws"], int(lease["uid"]), problems)
    return live


def _pick(ws: str, base: int, taken: set[int]) -> int:
    """A uid no live lease holds and nobody else on the machine has (see :mod:`._uidcheck`),
    searched from a hash of the path."""
    check = UidCheck()
    start = zlib.crc32(os.fsencode(ws)) % _SPAN
    first_clash = ""
    for i in range(_SPAN):
        uid = base + (start + i) % _SPAN
        if uid in taken:
            continue
        clash = check.taken_by(uid)
        if clash is None:
            return uid
        first_clash = first_clash or f"{uid}: {clash}"
    raise SandboxError(
        f"no free sandbox uid in [{base}, {base + _SPAN}) (e.g. {first_clash or 'all leased'}); "
        "set sandbox.uid_base to a range nobody uses (docs/sandbox.md, 'Reserving the uid range')"
    )


def acquire(
    workspace: Path, base: int, *, on_first: Hook | None = None, on_last: Hook | None = None
) -> Lease:
    """Leases the workspace's uid: the one its live leases use, else a uid no live lease holds
    (searched from a hash of the path, so a workspace tends to get the same one)."""
    ws = str(workspace)
    problems: list[str] = []
    with _locked() as (leases, table):
        leases = _reap(leases, on_last, problems)
        taken = {int(lease["uid"]) for lease in leases}
        same = [lease for lease in leases if lease["ws"] == ws]
        uid = int(same[0]["uid"]) if same else _pick(ws, base, taken)
        me = os.getpid()
        lease = Lease(uid, ws, uuid.uuid4().hex, problems)
        leases.append({"uid": uid, "ws": ws, "pid": me, "start": _start_time(me), "id": lease.id})
        if not same and on_first is not None:
            on_first(ws, uid)  # raises: the lease is not recorded
        _write(table, leases)
    return lease


def release(
    lease: Lease, *, on_last: Hook | None = None, problems: list[str] | None = None
) -> bool:
    """Ends a lease; True (after ``on_last`` ran) when its workspace has no live lease left.
    What the hooks report goes into ``problems``."""
    found: list[str] = []
    with _locked() as (leases, table):
        # Ours is alive, so reaping cannot end our workspace; then ours goes.
        leases = [entry for entry in _reap(leases, on_last, found) if entry["id"] != lease.id]
        last = not any(entry["ws"] == lease.workspace for entry in leases)
        if last and on_last is not None:
            _run_hook(on_last, lease.workspace, lease.uid, found)
        _write(table, leases)
    if problems is not None:
        problems += found
    return last


def live_leases() -> list[Lease]:
    """The leases held now (for ``omnilab doctor`` and tests)."""
    with _locked() as (leases, _):
        return [Lease(int(e["uid"]), str(e["ws"]), str(e["id"])) for e in leases if _alive(e)]
