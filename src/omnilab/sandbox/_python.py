"""A persistent Python interpreter in the sandbox: :class:`PythonSession`."""

from __future__ import annotations

import json
import os
import struct
import sys
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from omnilab.config import SandboxLimits
from omnilab.sandbox._headtail import HeadTail
from omnilab.sandbox._run import start_sandbox
from omnilab.sandbox._session import Session
from omnilab.sandbox._spawn import SandboxProcess
from omnilab.sandbox._types import IsolationLevel, PythonResult

__all__ = ["PythonSession"]

_REPLY_MAX = 8 * 1024**2
_RESTARTED = "the interpreter was restarted: variables and imports from earlier calls are gone"
_IDLE_BURN = (
    "threads or processes left running used {:.1f} s of CPU between calls (more than a call "
    "may use); the interpreter was restarted"
)
# The driver stops the code at the CPU limit itself (a traceback, the state kept); the harness's
# own count over the whole tree ends the interpreter a little later if that did not work.
_CPU_GRACE_S = 1.0


@cache
def _driver_source() -> str:
    return Path(__file__).with_name("_pydriver.py").read_text()


class PythonSession(Session):
    """One Python interpreter per task, in a sandboxed child process.

    Variables, imports and functions survive between :meth:`run` calls; a block ending in an
    expression shows that value once (``PythonResult.value``), like a notebook. A call that
    passes its wall-clock limit kills the interpreter (the next call starts a fresh one, and both
    results say the state is lost). Not thread-safe: one call at a time.

    Example:
        >>> with PythonSession(workspace) as py:
        ...     py.run("x = 21")
        ...     py.run("x * 2").value
        '42'
    """

    def __init__(
        self,
        workspace: Path | str,
        *,
        limits: SandboxLimits | None = None,
        network: bool | None = None,
        env: Mapping[str, str] | None = None,
        isolation: IsolationLevel | str | None = None,
        python: str | None = None,
    ) -> None:
        super().__init__(workspace, limits=limits, network=network, env=env, isolation=isolation)
        self.python = python or sys.executable
        """The interpreter (default the harness's own, so the same packages import)."""
        self._requests = -1
        self._replies = -1
        self.calls = 0
        """Blocks run so far."""
        self._cpu_end: float | None = None

    def _start(self) -> SandboxProcess:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            proc, self._warnings = start_sandbox(
                [self.python, "-I", "-c", _driver_source(), str(self.limits.output_bytes)],
                workspace=self.workspace,
                limits=self.limits,
                network=self._network,
                env=self._env,
                isolation=self._isolation,
                fd_map={3: req_r, 4: rep_w},
                cpu_per_process=False,
            )
        except BaseException:
            for fd in (req_w, rep_r):  # the child ends were closed by start_sandbox
                os.close(fd)
            raise
        # One whole reply at most: the next is only read after this one was taken.
        proc.watch(rep_r, 4 + _REPLY_MAX)
        self._requests, self._replies = req_w, rep_r
        return proc

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.close()
            self._proc = None
        if self._requests >= 0:
            os.close(self._requests)
            self._requests = -1

    def _reply(self) -> dict[str, object] | None:
        assert self._proc is not None
        if self._replies in self._proc.overflowed:
            return {
                "error": f"the interpreter sent more than {_REPLY_MAX} bytes of replies; killed it"
            }
        data = self._proc.extra.get(self._replies, bytearray())
        if len(data) < 4:
            return None
        size = struct.unpack(">I", data[:4])[0]
        if size > _REPLY_MAX:
            return {"error": f"the interpreter sent a {size}-byte reply; killed it"}
        if len(data) < 4 + size:
            return None
        body = bytes(data[4 : 4 + size])
        del data[: 4 + size]
        try:
            reply = json.loads(body)
        except (ValueError, RecursionError):
            # RecursionError: a forged reply nested deeper than the parser's stack.
            return {"error": "the interpreter sent a malformed reply; killed it"}
        return reply if isinstance(reply, dict) else {"error": "malformed reply"}

    def run(self, code: str, *, timeout: float | None = None) -> PythonResult:
        """Runs a block of code in the session's interpreter.

        Args:
            code: Python source; its last line's value (if an expression) is returned once.
            timeout: Wall-clock seconds for this call; default ``limits.wall_seconds``.

        Returns:
            What the block printed, its value or traceback, and whether limits stopped it.
        """
        started = time.monotonic()
        state_lost = False
        notes: list[str] = []
        idle = self._idle_cpu()
        if idle > self.limits.cpu_seconds:
            # Threads or processes left running burnt a whole call's CPU while no call ran.
            notes.append(_IDLE_BURN.format(idle))
            self._stop()
        if self._proc is None or self._proc.popen.poll() is not None:
            self._stop()
            state_lost = self.calls > 0
            self.restarts += int(state_lost)
            self._proc = self._start()
            self._cpu_end = None
        proc = self._proc
        self.calls += 1
        # The harness counts the call's CPU over the whole tree (and what ran since the last
        # call): the driver's own timer is a courtesy that code can switch off.
        start = self._cpu_end if self._cpu_end is not None else proc.cpu_used()
        if start is not None:
            proc.cpu_budget = (start, self.limits.cpu_seconds + _CPU_GRACE_S)
        proc.stdout = HeadTail(self.limits.output_bytes)
        proc.stderr = HeadTail(self.limits.output_bytes)
        body = json.dumps({"code": code, "cpu": self.limits.cpu_seconds}).encode()
        proc.send(struct.pack(">I", len(body)) + body, fd=self._requests)
        deadline = started + (timeout or self.limits.wall_seconds)
        reply: dict[str, object] | None = None

        def replied() -> bool:
            nonlocal reply
            reply = self._reply()
            return reply is not None or not proc.reading(self._replies) or proc.finished

        answered = proc.pump(deadline, until=replied)
        if reply is None and answered:
            # The reply pipe ended: the interpreter died (os._exit, a signal, a limit).
            proc.pump(time.monotonic() + 2.0)
        proc.drain()
        proc.cpu_budget = None
        warnings = [*self._warnings, *notes]
        if state_lost:
            warnings.append(_RESTARTED)
        killed: str | None = None
        error: str | None = None
        value: str | None = None
        if reply is not None and "value" in reply:
            # The driver shortens these itself, but it runs model code: bound them here too.
            value = self._bounded(reply.get("value"))
            error = self._bounded(reply.get("error"))
            limit = reply.get("limit")  # only a string: str() of a forged nest recurses
            killed = {"cpu limit": "cpu limit", "memory limit": "memory limit"}.get(
                limit if isinstance(limit, str) else ""
            )
        else:
            proc.kill()
            outcome = proc.outcome(timed_out=not answered)
            killed = outcome.killed
            said = reply.get("error") if reply else None
            error = (
                said if isinstance(said, str) else self._death(outcome.exit_code, outcome.signal)
            )
            if not answered:
                error = f"the call took longer than {deadline - started:.0f} s and was stopped"
            elif proc.cpu_exceeded:
                error = (
                    f"the call used more than {self.limits.cpu_seconds:g} s of CPU (counted over "
                    "all its threads and processes) and the interpreter was stopped"
                )
            warnings.append(
                "the interpreter was killed: variables are lost; the next call starts afresh"
            )
            state_lost = True
            self._stop()
        self._cpu_end = proc.cpu_used() if self._proc is not None else None
        return PythonResult(
            stdout=proc.stdout.text(),
            stderr=proc.stderr.text(),
            value=value,
            error=error,
            timed_out=not answered,
            killed=killed,
            state_lost=state_lost,
            duration_s=round(time.monotonic() - started, 3),
            isolation=proc.level,
            network=proc.network,
            missing_totals=proc.missing_totals,
            warnings=warnings,
        )

    def _idle_cpu(self) -> float:
        """CPU seconds the interpreter's tree used since the last call ended."""
        if self._proc is None or self._cpu_end is None or self._proc.popen.poll() is not None:
            return 0.0
        used = self._proc.cpu_used()
        return 0.0 if used is None else used - self._cpu_end

    def _bounded(self, text: object) -> str | None:
        if not isinstance(text, str):
            return None
        # Room for what a healthy driver sends (limit characters, up to 4 bytes each, + marker).
        kept = HeadTail(4 * self.limits.output_bytes + 256)
        kept.write(text.encode())
        return kept.text()

    @staticmethod
    def _death(code: int | None, sig: str | None) -> str:
        how = f"signal {sig}" if sig else f"exit status {code}"
        return f"the interpreter died ({how})"
