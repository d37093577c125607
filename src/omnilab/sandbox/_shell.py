"""A persistent bash in the sandbox: :class:`ShellSession`."""

from __future__ import annotations

import os
import re
import secrets
import string
import time
from collections.abc import Mapping
from pathlib import Path

from omnilab.config import SandboxLimits
from omnilab.sandbox import _procs
from omnilab.sandbox._headtail import HeadTail
from omnilab.sandbox._run import start_sandbox
from omnilab.sandbox._session import Session
from omnilab.sandbox._spawn import SandboxProcess
from omnilab.sandbox._types import ExecResult, IsolationLevel

__all__ = ["ShellSession", "bash_quote"]

_SAFE = set(string.ascii_letters + string.digits + " _-+=.,:/@%^")
_GRACE_S = 2.0
# What the shell may write on its completion descriptor per command: one "<nonce> <status>"
# line; code in the shell can write there too (bash keeps the descriptor open), so more ends it.
_DONE_CAP = 4096
_RESTARTED = "the shell was restarted: its working directory and variables are back to the start"


def bash_quote(text: str) -> str:
    """``text`` as one bash ``$'...'`` word on one line, whatever it contains."""
    out = []
    for ch in text:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}" for b in ch.encode())
    return "$'" + "".join(out) + "'"


class ShellSession(Session):
    """One bash per task, in the sandbox: ``cd``, variables and functions survive between
    commands.

    Each :meth:`run` sends one command. Completion is reported on a private pipe (not in the
    output, so no marker can be faked or leak into it). A command that passes its timeout is
    killed with everything it started, and the shell is kept; if the shell itself is stuck (a
    builtin loop) or exits, it is restarted and the result says so. Not thread-safe.
    """

    def __init__(
        self,
        workspace: Path | str,
        *,
        limits: SandboxLimits | None = None,
        network: bool | None = None,
        env: Mapping[str, str] | None = None,
        isolation: IsolationLevel | str | None = None,
    ) -> None:
        super().__init__(workspace, limits=limits, network=network, env=env, isolation=isolation)
        self._done = -1
        self.commands = 0
        """Commands run so far."""

    def _start(self) -> SandboxProcess:
        done_r, done_w = os.pipe()
        try:
            proc, self._warnings = start_sandbox(
                ["bash", "--noprofile", "--norc"],
                workspace=self.workspace,
                limits=self.limits,
                network=self._network,
                env=self._env,
                isolation=self._isolation,
                stdin_pipe=True,
                fd_map={3: done_w},
            )
        except BaseException:
            os.close(done_r)  # the child end was closed by start_sandbox
            raise
        proc.watch(done_r, _DONE_CAP)
        self._done = done_r
        return proc

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.close()
            self._proc = None

    def _finished(self, proc: SandboxProcess, nonce: str) -> re.Match[bytes] | None:
        return re.search(rf"{nonce} (\d+)\n".encode(), proc.extra.get(self._done, b""))

    def run(self, command: str, *, timeout: float | None = None) -> ExecResult:
        """Runs one command line (or script) in the shell.

        Args:
            command: Bash source; it runs in the shell itself (``cd`` and ``export`` persist),
                with stdin from ``/dev/null``.
            timeout: Wall-clock seconds; default ``limits.wall_seconds``.

        Returns:
            Its exit status and output; ``timed_out`` when it was killed, ``state_lost`` when
            the shell had to be restarted.
        """
        started = time.monotonic()
        state_lost = False
        if self._proc is None or self._proc.popen.poll() is not None:
            self._stop()
            state_lost = self.commands > 0
            self.restarts += int(state_lost)
            self._proc = self._start()
        proc = self._proc
        self.commands += 1
        proc.stdout = HeadTail(self.limits.output_bytes)
        proc.stderr = HeadTail(self.limits.output_bytes)
        proc.extra[self._done] = bytearray()
        cpu_start = proc.cpu_used()
        if cpu_start is not None:
            # Each process has its RLIMIT_CPU; this bounds the command's whole tree.
            proc.cpu_budget = (cpu_start, self.limits.cpu_seconds + 1.0)
        nonce = secrets.token_hex(8)
        # fd 3 is closed for the command itself: only the shell reports completion.
        line = f"eval {bash_quote(command)} 3>&- </dev/null; printf '{nonce} %d\\n' $? >&3\n"
        proc.send(line.encode())
        limit = timeout or self.limits.wall_seconds

        def ended() -> bool:
            return self._finished(proc, nonce) is not None or not proc.reading(self._done)

        completed = proc.pump(started + limit, until=ended)
        warnings = list(self._warnings)
        if state_lost:
            warnings.append(_RESTARTED)
        if not completed:
            warnings.append(f"the command took longer than {limit:g} s and was killed")
            # Kill again while waiting: a loop in the command line starts the next program as
            # soon as one dies; killing each lets the line end and the shell be kept.
            grace = time.monotonic() + _GRACE_S
            while not ended() and time.monotonic() < grace:
                self._interrupt(proc)
                proc.pump(min(grace, time.monotonic() + 0.1), until=ended)
        proc.drain()
        proc.cpu_budget = None
        match = self._finished(proc, nonce)
        exit_code = int(match.group(1)) if match else None
        signal_name = "SIGKILL" if not completed else None
        killed = "wall-clock timeout" if not completed else None
        if self._done in proc.overflowed:
            match = None
            warnings.append(
                f"the command wrote more than {_DONE_CAP} bytes to the shell's completion "
                "descriptor; the shell was stopped"
            )
        if match is None:
            # The shell exited (``exit``, ``exec``), died (its own CPU limit) or is stuck in a
            # builtin: start over, saying why when a limit ended it.
            proc.kill()
            outcome = proc.outcome(timed_out=not completed)
            signal_name, killed = outcome.signal, outcome.killed
            self._stop()
            state_lost = True
            warnings.append(
                "the shell ended or hung and will be restarted: its working directory and "
                "variables are lost"
            )
        return ExecResult(
            exit_code=exit_code,
            signal=signal_name,
            stdout=proc.stdout.text(),
            stderr=proc.stderr.text(),
            stdout_bytes=proc.stdout.total,
            stderr_bytes=proc.stderr.total,
            timed_out=not completed,
            killed=killed,
            duration_s=round(time.monotonic() - started, 3),
            isolation=proc.level,
            network=proc.network,
            state_lost=state_lost,
            missing_totals=proc.missing_totals,
            warnings=warnings,
        )

    def _interrupt(self, proc: SandboxProcess) -> None:
        """Kills the running command and all it started, sparing the shell (and its reaper)."""
        ready = proc.event("ready")
        shell = proc.program_pid()
        launcher = _procs.host_pid(proc.popen.pid, int(ready["pid"])) if ready else None
        if shell is None or launcher is None:
            proc.kill()
            return
        _procs.kill_tree(launcher, include_root=False, keep=[shell])
