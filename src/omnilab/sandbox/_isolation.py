"""Which isolation level works on this machine: probed once, on first use, by really starting a
sandbox at each level (a binary on PATH is not enough: user namespaces may be disabled)."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

from pydantic import BaseModel, Field

from omnilab.config import SandboxLimits, get_settings
from omnilab.sandbox._cgroup import cgroup_status
from omnilab.sandbox._launch import Launch
from omnilab.sandbox._plan import mount_plan, run_folders
from omnilab.sandbox._seccomp import filter_program
from omnilab.sandbox._spawn import SandboxProcess
from omnilab.sandbox._types import IsolationLevel, SandboxError
from omnilab.sandbox._uidcheck import SPAN, describe_range

__all__ = [
    "IsolationReport",
    "isolation_level",
    "isolation_report",
    "resolve_level",
    "visible_paths",
]

log = logging.getLogger("omnilab.sandbox")

_BINARY = {IsolationLevel.BWRAP: "bwrap", IsolationLevel.NAMESPACES: "unshare"}
_HOW_TO_GET = {
    IsolationLevel.BWRAP: "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap)",
    IsolationLevel.NAMESPACES: "needs unshare (util-linux) and root or unprivileged user namespaces",
}


class IsolationReport(BaseModel):
    """What the sandbox can enforce on this machine, for people and for logs."""

    level: IsolationLevel
    """The strongest level that works here (what ``auto`` uses)."""

    own_uid: bool
    """Sandboxed code runs under a uid of its own (the harness is root): other users' files
    (``~/.ssh``) are unreadable and RLIMIT_NPROC is a per-sandbox limit."""

    blocked: list[str]
    """What sandboxed code cannot do at this level."""

    not_blocked: list[str]
    """What it still can: read this honestly before running untrusted code."""

    unavailable: dict[str, str] = Field(default_factory=dict)
    """Stronger levels that do not work here, and why."""

    totals: dict[str, str] = Field(default_factory=dict)
    """Each per-sandbox total (memory, processes, cpu rate, cpu time, workspace size) and what
    enforces it here, or ``MISSING (why)``."""

    missing_totals: list[str] = Field(default_factory=list)
    """The totals nothing enforces on this machine (results carry the same list)."""

    seccomp: bool = False
    """A seccomp filter (no new namespaces, ptrace, bpf, io_uring, keyrings, mounts...) is
    loaded for sandboxed programs (x86_64 and aarch64)."""

    visible: list[str] = Field(default_factory=list)
    """Every host path sandboxed code sees at this level, with how (read-only, read-write,
    private); at the ``process`` level, what cannot be hidden."""

    private: list[str] = Field(default_factory=list)
    """A run's own folders, masked in its sandboxes wherever they lie (a run adds its dataset,
    media root and run folder; the ones listed are known before any run: the settings' data
    folders and what this process's runs named)."""

    uids: str = ""
    """The sandbox uid range and whether anything of the machine lies in it (root harness)."""

    def summary(self) -> str:
        """One paragraph for logs and the CLI."""
        text = f"sandbox isolation: {self.level.value}; blocks: {'; '.join(self.blocked)}"
        if self.not_blocked:
            text += f"; does NOT block: {'; '.join(self.not_blocked)}"
        for level, why in self.unavailable.items():
            text += f"; {level} unavailable: {why}"
        if self.missing_totals:
            text += f"; totals NOT enforced: {', '.join(self.missing_totals)}"
        return text


@cache
def _probe(level: IsolationLevel) -> str | None:
    """Starts a trivial program at ``level`` (once per process); None when it worked, else why
    not."""
    binary = _BINARY.get(level)
    if binary and shutil.which(binary) is None:
        return f"{binary} not found on PATH; {_HOW_TO_GET[level]}"
    workspace = Path(tempfile.mkdtemp(prefix="omnilab-probe-"))
    try:
        proc = SandboxProcess(
            Launch(
                command=[sys.executable, "-I", "-S", "-c", "pass"],
                workspace=workspace,
                level=level,
                limits=SandboxLimits(wall_seconds=20),
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
        )
        try:
            finished = proc.pump(time.monotonic() + 20)
            outcome = proc.outcome(timed_out=not finished)
        finally:
            proc.close()
    except (OSError, SandboxError) as exc:
        return str(exc)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if outcome.exit_code == 0:
        return None
    why = outcome.error or proc.stderr.text().strip().splitlines()[-1:] or ["no output"]
    return f"probe failed ({why if isinstance(why, str) else why[0]})"


_SECCOMP = (
    "new user namespaces, ptrace, bpf, io_uring, kernel keyrings, mount, kexec, kernel modules, "
    "perf events, userfaultfd and terminal injection (seccomp filter)"
)


def _describe(
    level: IsolationLevel, own_uid: bool, seccomp: bool, missing: list[str]
) -> tuple[list[str], list[str]]:
    blocked = [
        "runaway CPU, memory and file size of each process (rlimits, RLIMIT_NOFILE too)",
        "output floods (head+tail kept)",
        "leftover processes (killed with the tree, the cgroup, or by uid)",
        "the harness's environment secrets (scrubbed from the program's environment)",
    ]
    not_blocked: list[str] = []
    if seccomp:
        blocked.append(_SECCOMP)
    else:
        not_blocked.append("dangerous system calls (no seccomp filter for this architecture)")
    totals = [t for t in ("memory", "processes", "cpu rate", "cpu time") if t not in missing]
    if totals:
        blocked.append(f"totals of the whole sandbox: {', '.join(totals)} (cgroups)")
    if "workspace size" not in missing:
        blocked.append("filling the disk (the workspace is a size- and inode-limited tmpfs)")
    if missing:
        not_blocked.append(
            f"totals of the whole sandbox: {', '.join(missing)} (see omnilab doctor)"
        )
    if level is IsolationLevel.PROCESS:
        if own_uid:
            blocked += [
                "the harness's secrets through /proc/PID/environ, ptrace or signals (own uid)",
                "other users' and other workspaces' private files (own uid, 0700 workspaces)",
                "fork bombs (RLIMIT_NPROC for the sandbox's own uid)",
            ]
        else:
            not_blocked += [
                "the harness's secrets through /proc/PID/environ (same uid as the harness)",
                "signalling or killing the harness and its other processes (same uid)",
                "reading and writing every file the harness's user can",
            ]
        not_blocked += [
            "reading world-readable files anywhere on the machine (the harness's checkout, "
            "PYTHONPATH entries, run folders with results and trajectories, dataset files with "
            "their labels, media, caches, configs): nothing is hidden, only permissions apply",
            "writing world-writable places outside the workspace (/tmp, /dev/shm)",
            "network access",
        ]
        return blocked, not_blocked
    blocked += [
        "network (own network namespace: no way out, not even to the host's loopback), "
        "unless a task allows it",
        "writing outside the workspace (read-only root; /tmp is private)",
        "seeing any of the machine's files but the system folders, the Python install and "
        "omnilab's package (read-only) and its workspace: an empty root holds only those, so "
        "homes, caches, the harness's folders, checkouts, PYTHONPATH entries, run folders, "
        "datasets, media and other workspaces do not exist inside",
        "device files other than null, zero, full, random, urandom, tty and terminals "
        "(minimal /dev)",
        "seeing or signalling other processes (own pid namespace)",
        "leftover processes (the pid namespace dies with the program)",
    ]
    not_blocked.append("reading world-readable system files (/usr, /etc, /sys)")
    if own_uid:
        blocked.append("fork bombs (RLIMIT_NPROC for the sandbox's own uid)")
    elif "processes" in missing:
        not_blocked.append("fork bombs until the wall timeout (RLIMIT_NPROC needs its own uid)")
    return blocked, not_blocked


def _totals() -> tuple[dict[str, str], list[str]]:
    status = cgroup_status()
    if os.geteuid() == 0:
        status["workspace size"] = (
            "size- and inode-limited tmpfs per live workspace (a result whose mount failed "
            "lists it in missing_totals)"
        )
    else:
        status["workspace size"] = "MISSING (mounting the workspace tmpfs needs a root harness)"
    return status, [name for name, how in status.items() if how.startswith("MISSING")]


@cache
def isolation_report() -> IsolationReport:
    """Probes the levels (once per process) and reports the strongest that works here."""
    unavailable: dict[str, str] = {}
    level = IsolationLevel.PROCESS
    for candidate in (IsolationLevel.BWRAP, IsolationLevel.NAMESPACES):
        why = _probe(candidate)
        if why is None:
            level = candidate
            break
        unavailable[candidate.value] = why
    unsafe = level is IsolationLevel.PROCESS and get_settings().sandbox.unsafe_process_as_root
    own_uid = os.geteuid() == 0 and not unsafe
    seccomp = filter_program() is not None
    totals, missing = _totals()
    blocked, not_blocked = _describe(level, own_uid, seccomp, missing)
    visible = visible_paths(level, own_uid)
    report = IsolationReport(
        level=level,
        own_uid=own_uid,
        blocked=blocked,
        not_blocked=not_blocked,
        unavailable=unavailable,
        totals=totals,
        missing_totals=missing,
        seccomp=seccomp,
        visible=visible,
        private=run_folders(),
        uids=describe_range(get_settings().sandbox.uid_base, SPAN) if own_uid else "",
    )
    if level is IsolationLevel.PROCESS:
        log.warning("%s", report.summary())
    else:
        log.info("%s", report.summary())
    return report


def visible_paths(level: IsolationLevel, own_uid: bool) -> list[str]:
    """The host paths sandboxed code sees at ``level`` (the workspace named ``<workspace>``)."""
    if level is IsolationLevel.PROCESS:
        who = "its own uid" if own_uid else "the harness's user"
        return [
            f"/ (everything {who} may read: nothing is hidden at this level)",
            "<workspace> (read-write)",
        ]
    workspace = str(Path(tempfile.gettempdir()) / "<workspace>")
    lines = mount_plan(Path(workspace), as_stranger=own_uid).visible(workspace)
    return [line.replace(workspace, "<workspace>") for line in lines]


def isolation_level() -> IsolationLevel:
    """The strongest isolation level that works on this machine."""
    return isolation_report().level


def resolve_level(requested: IsolationLevel | str | None) -> IsolationLevel:
    """The level to run at: ``None`` follows the settings (``auto`` = strongest available); a
    named level must work here, or this raises rather than silently running weaker."""
    wanted = requested if requested is not None else get_settings().sandbox.isolation
    if wanted == "auto":
        return isolation_level()
    try:
        level = IsolationLevel(wanted)
    except ValueError:
        names = ", ".join(["auto", *(lvl.value for lvl in IsolationLevel)])
        raise SandboxError(f"unknown isolation level {wanted!r}; use one of {names}") from None
    why = None if level is IsolationLevel.PROCESS else _probe(level)
    if why is not None:
        raise SandboxError(f"isolation level {level.value!r} is not available here: {why}")
    return level
