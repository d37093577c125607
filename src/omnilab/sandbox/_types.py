"""The sandbox's public types: isolation levels, results and the error a caller can cause."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from omnilab.errors import OmnilabError

__all__ = ["ExecResult", "IsolationLevel", "PythonResult", "SandboxError"]


class SandboxError(OmnilabError):
    """A sandbox cannot be started as asked (bad workspace, isolation level not available...)."""


class IsolationLevel(StrEnum):
    """How strongly sandboxed code is separated from the machine, strongest first."""

    BWRAP = "bwrap"
    """bubblewrap: read-only root, only the workspace writable, private /tmp, homes hidden, no
    network, own pid namespace; under its own uid when the harness is root."""

    NAMESPACES = "namespaces"
    """``unshare`` + our launcher: the same mounts, network and pid namespaces as ``bwrap``,
    set up without bubblewrap."""

    PROCESS = "process"
    """Resource limits, seccomp, own process group, scrubbed environment, the workspace as
    working directory and (harness root) a uid of its own: reads of world-readable files and
    writes to world-writable places outside the workspace and the network are NOT blocked."""

    @property
    def rank(self) -> int:
        """Higher is stronger."""
        return {"process": 0, "namespaces": 1, "bwrap": 2}[self.value]


class ExecResult(BaseModel):
    """What one sandboxed command (or one shell command) did."""

    exit_code: int | None
    """The exit status; ``None`` when the program was killed by a signal."""

    signal: str | None = None
    """The signal that ended the program (``SIGKILL``, ``SIGXCPU``...), if one did."""

    stdout: str
    """Standard output; past the limit its head and tail with a ``[... N bytes cut ...]`` marker."""

    stderr: str
    """Standard error, truncated like ``stdout``."""

    stdout_bytes: int = 0
    """Bytes written to standard output in all (before truncation)."""

    stderr_bytes: int = 0
    """Bytes written to standard error in all (before truncation)."""

    timed_out: bool = False
    """The wall-clock limit passed and the process tree was killed."""

    killed: str | None = None
    """Why it stopped early, if it did: ``wall-clock timeout``, ``cpu limit``, ``memory limit``,
    ``file size limit``."""

    duration_s: float = 0.0
    """Wall-clock seconds from start to the end of the output."""

    cpu_s: float | None = None
    """CPU seconds (user + system) of the program and the children it waited for."""

    isolation: IsolationLevel
    """The isolation level this ran under."""

    network: bool = False
    """Whether the program could reach the network (always true at the ``process`` level)."""

    missing_totals: list[str] = Field(default_factory=list)
    """Totals this sandbox ran without on this machine (``memory``, ``processes``, ``cpu rate``,
    ``cpu time``, ``workspace size``): no cgroup or tmpfs could enforce them (``omnilab
    doctor`` says why)."""

    state_lost: bool = False
    """For a shell session: the shell had to be restarted, so its cwd and variables are gone."""

    warnings: list[str] = Field(default_factory=list)
    """Things the caller (or the model) should know: isolation gaps, restarts."""

    @property
    def ok(self) -> bool:
        """True when the program exited with status 0 within its limits."""
        return self.exit_code == 0 and self.killed is None

    @property
    def truncated(self) -> bool:
        """True when stdout or stderr was cut."""
        return len(self.stdout.encode()) < self.stdout_bytes or len(self.stderr.encode()) < (
            self.stderr_bytes
        )


class PythonResult(BaseModel):
    """What one block of code did in a persistent :class:`PythonSession`."""

    stdout: str
    """Everything printed to standard output (by Python or by programs it ran), head + tail."""

    stderr: str
    """Everything printed to standard error, head + tail."""

    value: str | None = None
    """``repr`` of the last line's value when the block ends in an expression (not ``None``)."""

    error: str | None = None
    """The traceback when the block raised, the driver's frames left out."""

    timed_out: bool = False
    """The per-call wall-clock limit passed; the interpreter was killed and restarted."""

    killed: str | None = None
    """Why the call stopped early: ``wall-clock timeout``, ``cpu limit``, ``memory limit``..."""

    state_lost: bool = False
    """The interpreter was (re)started during this call: variables from earlier calls are gone."""

    duration_s: float = 0.0
    """Wall-clock seconds of the call."""

    isolation: IsolationLevel
    """The isolation level of the interpreter."""

    network: bool = False
    """Whether the code could reach the network."""

    missing_totals: list[str] = Field(default_factory=list)
    """Totals this sandbox ran without on this machine (``memory``, ``processes``, ``cpu rate``,
    ``cpu time``, ``workspace size``): no cgroup or tmpfs could enforce them (``omnilab
    doctor`` says why)."""

    warnings: list[str] = Field(default_factory=list)
    """Things the caller (or the model) should know: isolation gaps, restarts."""

    @property
    def ok(self) -> bool:
        """True when the block ran to the end without an exception."""
        return self.error is None and self.killed is None
