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
from omnilab.sandbox._spawn import Launch, SandboxProcess
from omnilab.sandbox._types import IsolationLevel, SandboxError

__all__ = ["IsolationReport", "isolation_level", "isolation_report", "resolve_level"]

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

    def summary(self) -> str:
        """One paragraph for logs and the CLI."""
        text = f"sandbox isolation: {self.level.value}; blocks: {'; '.join(self.blocked)}"
        if self.not_blocked:
            text += f"; does NOT block: {'; '.join(self.not_blocked)}"
        for level, why in self.unavailable.items():
            text += f"; {level} unavailable: {why}"
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


def _describe(level: IsolationLevel, own_uid: bool) -> tuple[list[str], list[str]]:
    if level is IsolationLevel.PROCESS:
        blocked = [
            "runaway CPU, memory and file size (rlimits)",
            "output floods (head+tail kept)",
            "leftover processes (killed with the tree)",
            "the harness's environment secrets (scrubbed)",
        ]
        not_blocked = [
            "reading files outside the workspace (~/.ssh included)",
            "writing files outside the workspace",
            "network access",
            "fork bombs beyond the wall timeout (no uid of its own)",
        ]
        return blocked, not_blocked
    blocked = [
        "network (own network namespace: no way out, not even to the host's loopback), "
        "unless a task allows it",
        "writing outside the workspace (read-only root; /tmp is private)",
        "reading homes, /run and /mnt (hidden behind empty tmpfs)",
        "seeing or signalling other processes (own pid namespace)",
        "leftover processes (the pid namespace dies with the program)",
        "runaway CPU, memory and file size (rlimits)",
        "the harness's environment secrets (scrubbed)",
    ]
    not_blocked = ["reading world-readable files outside homes (system and project files)"]
    if own_uid:
        blocked.append("fork bombs (RLIMIT_NPROC for the sandbox's own uid)")
    else:
        not_blocked.append("fork bombs until the wall timeout (RLIMIT_NPROC needs its own uid)")
    return blocked, not_blocked


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
    own_uid = os.geteuid() == 0 and level is not IsolationLevel.PROCESS
    blocked, not_blocked = _describe(level, own_uid)
    report = IsolationReport(
        level=level,
        own_uid=own_uid,
        blocked=blocked,
        not_blocked=not_blocked,
        unavailable=unavailable,
    )
    if level is IsolationLevel.PROCESS:
        log.warning("%s", report.summary())
    else:
        log.info("%s", report.summary())
    return report


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
