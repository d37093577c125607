"""Which uids a sandbox may run under: only ones nobody else on the machine has.

A root harness runs each live workspace's code under a uid of its own from
``[uid_base, uid_base + 65536)``. A uid there is used only when, at the moment it is leased, it
is not a user or group of the machine (``/etc/passwd``, ``/etc/group`` and whatever NSS adds),
no running process holds it (as real, effective, saved or file-system uid or gid), and it lies in
no ``/etc/subuid`` or ``/etc/subgid`` range of any user other than ``omnilab`` (the name under
which a machine reserves the project's range, so that ``useradd`` never hands it to a user's
containers). Anyone whose uid or subordinate range lies there could otherwise read a task's
inputs, plant its answer or kill its interpreter.
"""

from __future__ import annotations

import grp
import pwd
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RESERVED_OWNER", "SPAN", "UidCheck", "describe_range"]

SPAN = 65536
"""How many uids the sandbox range holds, from ``sandbox.uid_base``."""

RESERVED_OWNER = "omnilab"
"""The owner name of the ``/etc/subuid`` and ``/etc/subgid`` lines that reserve the range."""
SUBID_FILES: tuple[str, ...] = ("/etc/subuid", "/etc/subgid")


def _ranges(files: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """``(first, end, "file of owner")`` for every subordinate range not reserved for omnilab."""
    found: list[tuple[int, int, str]] = []
    for name in files:
        try:
            lines = Path(name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            owner, _, rest = line.strip().partition(":")
            start, _, count = rest.partition(":")
            if owner.startswith("#") or not (start.isdigit() and count.isdigit()):
                continue
            if owner != RESERVED_OWNER:
                found.append((int(start), int(start) + int(count), f"{name} range of {owner}"))
    return found


def _running_ids() -> set[int]:
    """Every uid and gid a process of the machine holds now (all four of each)."""
    ids: set[int] = set()
    try:
        pids = [p.name for p in Path("/proc").iterdir() if p.name.isdigit()]
    except OSError:
        return ids
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # gone
        for line in text.splitlines():
            if line.startswith(("Uid:", "Gid:")):
                ids.update(int(v) for v in line.split()[1:])
    return ids


@dataclass
class UidCheck:
    """One look at the machine: which uids are someone's (made once per lease, when a new uid
    is picked; the passwd and group lookups are made per uid asked about)."""

    files: tuple[str, ...] | None = None
    """The subordinate-id files to read (default :data:`SUBID_FILES`)."""

    def __post_init__(self) -> None:
        self.ranges = _ranges(self.files if self.files is not None else SUBID_FILES)
        self.running = _running_ids()

    def taken_by(self, uid: int) -> str | None:
        """Why ``uid`` (and the gid of the same number) is someone's, or None when it is free."""
        for first, end, owner in self.ranges:
            if first <= uid < end:
                return owner
        if uid in self.running:
            return "held by a running process"
        try:
            return f"user {pwd.getpwuid(uid).pw_name}"
        except KeyError:
            pass
        try:
            return f"group {grp.getgrgid(uid).gr_name}"
        except KeyError:
            return None


def describe_range(base: int, span: int, files: tuple[str, ...] | None = None) -> str:
    """One line for ``omnilab doctor``: the range and what in it belongs to someone else."""
    end = base + span
    ranges = _ranges(files if files is not None else SUBID_FILES)
    clashes = [o for first, last, o in ranges if first < end and last > base]
    users = [u.pw_name for u in pwd.getpwall() if base <= u.pw_uid < end]
    users += [f"group {g.gr_name}" for g in grp.getgrall() if base <= g.gr_gid < end]
    clashes += [f"{len(users)} users/groups ({', '.join(users[:3])})"] if users else []
    running = sorted(i for i in _running_ids() if base <= i < end)
    if running:
        clashes.append(f"{len(running)} held by running processes (live sandboxes too)")
    where = f"[{base}, {end})"
    if not clashes:
        return f"{where}: verified, no user, group, process or other subordinate range in it"
    return f"{where}: uids there are skipped when taken; overlaps {'; '.join(clashes[:4])}"
