"""What a sandbox holds on the machine while it runs: its uid lease (and with it the workspace's
tmpfs), the prepared workspace and its cgroups; released together when it ends."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from omnilab.config import SandboxLimits
from omnilab.sandbox import _uids
from omnilab.sandbox._cgroup import SandboxCgroup
from omnilab.sandbox._plan import SYSTEM_DIRS, closed_ancestor
from omnilab.sandbox._types import IsolationLevel, SandboxError
from omnilab.sandbox._wsfs import (
    check_workspace,
    mount_workspace,
    prepare_workspace,
    release_workspace,
    size_limited,
)

__all__ = ["Holdings"]

log = logging.getLogger("omnilab.sandbox")


class Holdings:
    """Claims everything a sandbox needs before its program starts (raises if it cannot,
    having released what it got); :meth:`release` gives it all back."""

    def __init__(
        self,
        workspace: Path | str,
        *,
        level: IsolationLevel,
        limits: SandboxLimits,
        uid_base: int,
        as_root: bool,
        command: Sequence[str],
        env: Mapping[str, str],
    ) -> None:
        self.lease: _uids.Lease | None = None
        self.ids: tuple[int, int] | None = None
        """The uid and gid the program runs under (None: the harness's own)."""
        self.cgroup: SandboxCgroup | None = None
        self.warnings: list[str] = []
        """What went wrong on the way (releasing a dead harness's workspace, handing files to
        the uid), for the warnings of this sandbox's results."""
        try:
            ws = check_workspace(workspace)
            if os.geteuid() == 0 and not as_root:

                def first(path: str, uid: int) -> None:
                    try:
                        mount_workspace(
                            path,
                            max_bytes=limits.workspace_bytes,
                            max_inodes=limits.workspace_inodes,
                        )
                    except OSError as exc:
                        # Root without CAP_SYS_ADMIN (a container): run without the limit,
                        # which every result then reports missing.
                        log.warning("no size limit for workspace %s: %s", path, exc)

                self.lease = _uids.acquire(ws, uid_base, on_first=first, on_last=_reclaim)
                self.warnings += self.lease.problems
                self.ids = (self.lease.uid, self.lease.uid)
            if level is IsolationLevel.PROCESS and self.ids is not None:
                _check_reachable(self.ids[0], ws, command, env)
                _unlist_parent(ws)
            self.workspace = prepare_workspace(ws, self.ids, self.warnings)
            self.cgroup = SandboxCgroup(limits)
        except BaseException:
            self.release()
            raise
        missing = self.cgroup.missing
        if self.lease is None or not size_limited(self.workspace):
            missing = [*missing, "workspace size"]
        self.missing_totals: list[str] = missing
        """Totals this sandbox runs without (no cgroup for them, no workspace tmpfs)."""

    def release(self) -> list[str]:
        """Removes the cgroups and ends the uid lease (the last one of a workspace kills what
        its uid left running and copies the workspace back out of its tmpfs). Returns what went
        wrong (also logged), one line each."""
        problems: list[str] = []
        # Everything the sandbox started is in its cgroups (killed with them) when it has any;
        # without, what its uid runs is killed when the workspace's last sandbox ends.
        kill_uid = self.cgroup is None or not self.cgroup.folders
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None
        if self.lease is not None:
            lease, self.lease = self.lease, None
            _uids.release(
                lease,
                on_last=lambda ws, uid: release_workspace(ws, uid, kill=kill_uid),
                problems=problems,
            )
        for line in problems:
            log.warning("%s", line)
        return problems


def _reclaim(ws: str, uid: int) -> list[str]:
    """A workspace whose sandboxes' harness died: kill what its uid runs, copy it back."""
    return release_workspace(ws, uid)


def _unlist_parent(ws: Path) -> None:
    """At the ``process`` level nothing hides the folder holding the workspaces: make it
    passable but not listable for other uids (when it is the harness's own, not a system one)."""
    parent = ws.parent
    with contextlib.suppress(OSError):
        st = parent.lstat()
        if st.st_uid == os.geteuid() and st.st_mode & 0o004 and str(parent) not in SYSTEM_DIRS:
            parent.chmod(stat.S_IMODE(st.st_mode) & ~0o004)


def _check_reachable(
    uid: int, workspace: Path, command: Sequence[str], env: Mapping[str, str]
) -> None:
    """At the ``process`` level nothing is bound in place: the sandbox's own uid must be able to
    reach the workspace and the program on the real file system, or nothing can run."""
    program = shutil.which(command[0], path=env.get("PATH")) or command[0]
    for path in (str(workspace), os.path.realpath(program)):
        closed = closed_ancestor(path)
        if closed is not None:
            raise SandboxError(
                f"isolation level 'process' runs code under uid {uid} of its own, which cannot "
                f"enter {closed} (no o+x) on the way to {path}; use a workspace and an interpreter "
                "outside it, a stronger level, or set sandbox.unsafe_process_as_root to run model "
                "code as ROOT (unsafe)"
            )
