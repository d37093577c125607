"""Starting one sandboxed process and talking to it with bounded memory."""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omnilab.sandbox import _procs
from omnilab.sandbox._cgroup import SandboxCgroup
from omnilab.sandbox._headtail import HeadTail
from omnilab.sandbox._holdings import Holdings
from omnilab.sandbox._launch import Launch, launcher_argv
from omnilab.sandbox._plan import mount_plan
from omnilab.sandbox._types import IsolationLevel, SandboxError
from omnilab.sandbox._wsfs import prepare_workspace

__all__ = ["Outcome", "SandboxProcess", "prepare_workspace"]

_STATUS_MAX = 64 * 1024
# The launcher sends a handful of status messages; more is a flood, not news.
_EVENTS_MAX = 64
_CHUNK = 64 * 1024
_CPU_CHECK_S = 0.1


class SandboxProcess:
    """A running sandbox: its wrapper process, pipes and what its launcher reported."""

    def __init__(self, launch: Launch) -> None:
        self.level = launch.level
        self.network = launch.network or launch.level is IsolationLevel.PROCESS
        self.limits = launch.limits
        self.hold: Holdings | None = None
        self.release_warnings: list[str] = []
        """What went wrong giving the workspace back (filled by :meth:`close`)."""
        self.cpu_budget: tuple[float, float] | None = None
        """(CPU seconds at the start of the call, seconds allowed): :meth:`pump` kills the
        sandbox past it, counting the whole tree."""
        self.cpu_exceeded = False
        self._cpu_checked = 0.0
        try:
            self.hold = Holdings(
                launch.workspace,
                level=launch.level,
                limits=launch.limits,
                uid_base=launch.uid_base,
                as_root=launch.as_root,
                command=launch.command,
                env=launch.env,
            )
        except BaseException:
            # The child ends in ``fd_map`` are ours from the start: close them on every path.
            for fd in (launch.fd_map or {}).values():
                os.close(fd)
            raise
        self.ids = self.hold.ids
        self.hold_warnings = list(self.hold.warnings)
        """What went wrong claiming the workspace (for the first result's warnings)."""
        """The uid and gid the program runs under (None: the harness's own)."""
        self.workspace = self.hold.workspace
        self.cgroup: SandboxCgroup | None = self.hold.cgroup
        self.missing_totals = self.hold.missing_totals
        """Totals this sandbox runs without (no cgroup for them, no workspace tmpfs)."""
        self.stdout = HeadTail(launch.limits.output_bytes)
        self.stderr = HeadTail(launch.limits.output_bytes)
        self.events: list[dict[str, Any]] = []
        self.extra: dict[int, bytearray] = {}
        self._extra_cap: dict[int, int] = {}
        self.overflowed: set[int] = set()
        """Control descriptors closed because the sandbox sent more than their cap."""
        self._status_buf = bytearray()
        # Bytes waiting to be written, per descriptor (stdin, a control pipe), and the ones to
        # close once drained.
        self._pending: dict[int, bytes] = {}
        self._close_after: set[int] = set()
        self.started = time.monotonic()
        try:
            self.popen = self._start(launch)
        except BaseException:
            self._release()
            raise

    def _start(self, launch: Launch) -> subprocess.Popen[bytes]:
        status_r, status_w = os.pipe()
        # The harness keeps the write end for the sandbox's whole life (see the launcher).
        life_r, self._lifeline = os.pipe()
        child_ends = dict(launch.fd_map or {})
        plan = mount_plan(self.workspace, as_stranger=self.ids is not None)
        cgroup_fds = self.cgroup.join_fds() if self.cgroup else []
        argv = launcher_argv(
            launch,
            plan,
            workspace=self.workspace,
            ids=self.ids,
            status_fd=status_w,
            lifeline_fd=life_r,
            cgroup_fds=cgroup_fds,
        )
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if launch.stdin_pipe else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(status_w, life_r, *child_ends.values(), *cgroup_fds),
                cwd=self.workspace,
                env=dict(launch.env),
                start_new_session=True,
            )
        except OSError as exc:
            os.close(status_r)
            os.close(self._lifeline)
            raise SandboxError(f"cannot start the sandbox: {exc}") from exc
        finally:
            os.close(status_w)
            os.close(life_r)
            for fd in [*child_ends.values(), *cgroup_fds]:
                os.close(fd)
        assert popen.stdout is not None and popen.stderr is not None
        self._open: dict[int, str] = {
            popen.stdout.fileno(): "stdout",
            popen.stderr.fileno(): "stderr",
            status_r: "status",
        }
        for fd in self._open:
            os.set_blocking(fd, False)
        return popen

    # -- reading -------------------------------------------------------------------------------

    def watch(self, fd: int, cap: int) -> None:
        """Also collects what arrives on ``fd`` (a control pipe) into ``self.extra[fd]``; the
        process now owns ``fd`` and closes it at end of stream or in :meth:`close`.

        Sandboxed code can write to a control pipe too (a shell's saved descriptor, the
        interpreter's reply pipe), so at most ``cap`` bytes are ever held: one more byte stops
        reading ``fd`` for good (it is closed and listed in :attr:`overflowed`), which bounds
        both the harness's memory and what it reads."""
        os.set_blocking(fd, False)
        self._open[fd] = "extra"
        self.extra[fd] = bytearray()
        self._extra_cap[fd] = cap

    def reading(self, fd: int) -> bool:
        """Whether ``fd`` is still being read (it has not reached end of stream)."""
        return fd in self._open

    def send(self, data: bytes, *, fd: int | None = None, then_close: bool = False) -> None:
        """Queues bytes for the program's stdin (or the harness end ``fd`` of a control pipe),
        written while pumping; ``then_close`` closes it once all is written (a one-shot program
        reading to end of input)."""
        if fd is None:
            if self.popen.stdin is None or self.popen.stdin.closed:
                return
            fd = self.popen.stdin.fileno()
        os.set_blocking(fd, False)
        self._pending[fd] = self._pending.get(fd, b"") + data
        if then_close:
            self._close_after.add(fd)

    def event(self, name: str) -> dict[str, Any] | None:
        """The launcher's last message of this kind, if any."""
        for message in reversed(self.events):
            if message.get("event") == name:
                return dict(message)
        return None

    @property
    def finished(self) -> bool:
        """Output and status streams have all ended (the sandbox is gone)."""
        return not any(kind in ("stdout", "stderr", "status") for kind in self._open.values())

    def pump(self, deadline: float, until: Callable[[], bool] | None = None) -> bool:
        """Reads (and writes what was sent) until ``until()`` holds or, without it, until every stream
        ends; False when ``deadline`` (monotonic) came first."""
        done = until or (lambda: self.finished)
        with selectors.DefaultSelector() as sel:
            for fd in self._open:
                sel.register(fd, selectors.EVENT_READ)
            for fd in self._pending:
                sel.register(fd, selectors.EVENT_WRITE)
            while not done():
                self._check_cpu()
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if not sel.get_map():
                    return done()
                wait = min(left, 0.5 if self.cpu_budget is None else _CPU_CHECK_S)
                for key, events in sel.select(timeout=wait):
                    fd = int(key.fd)
                    if events & selectors.EVENT_WRITE:
                        self._write(sel, fd)
                    elif self._read(fd) == 0:
                        sel.unregister(fd)
            return True

    def cpu_used(self) -> float | None:
        """CPU seconds the whole sandbox used so far: the cgroup's count, else the sum over its
        live process tree (with what each reaped child left to its parent)."""
        if self.cgroup is not None:
            used = self.cgroup.cpu_seconds()
            if used is not None:
                return used
        if self.popen.poll() is not None:
            return None
        return _procs.tree_cpu_seconds(self.popen.pid)

    def _check_cpu(self) -> None:
        if self.cpu_budget is None or self.cpu_exceeded:
            return
        now = time.monotonic()
        if now - self._cpu_checked < _CPU_CHECK_S:
            return
        if self._cpu_checked == 0.0:  # just armed: nothing can have been used yet
            self._cpu_checked = now
            return
        self._cpu_checked = now
        used = self.cpu_used()
        start, allowed = self.cpu_budget
        if used is not None and used - start > allowed:
            self.cpu_exceeded = True
            self.kill()

    def drain(self) -> None:
        """Reads whatever is already waiting in the pipes, without blocking."""
        for fd in list(self._open):
            while self._read(fd) > 0:
                pass

    def _write(self, sel: selectors.BaseSelector, fd: int) -> None:
        data = self._pending[fd]
        try:
            written = os.write(fd, data[:_CHUNK])
        except BlockingIOError:
            return
        except OSError:
            written = len(data)  # the reader is gone: what it would have read no longer matters
        rest = data[written:]
        if rest:
            self._pending[fd] = rest
            return
        del self._pending[fd]
        sel.unregister(fd)
        if fd in self._close_after:
            self._close_after.discard(fd)
            if self.popen.stdin is not None and fd == self.popen.stdin.fileno():
                self.popen.stdin.close()
            else:
                os.close(fd)

    def _read(self, fd: int) -> int:
        """Reads one chunk: its size, 0 at end of stream (then closed), -1 if nothing waits."""
        kind = self._open.get(fd)
        if kind is None:
            return 0  # closed meanwhile (a kill while pumping pumps too): end of that stream
        size = _CHUNK
        if kind == "extra":
            size = max(1, min(_CHUNK, self._extra_cap[fd] - len(self.extra[fd]) + 1))
        try:
            data = os.read(fd, size)
        except BlockingIOError:
            return -1
        except OSError:
            data = b""
        if not data:
            self._close(fd)
            return 0
        if kind == "stdout":
            self.stdout.write(data)
        elif kind == "stderr":
            self.stderr.write(data)
        elif kind == "status":
            self._status(data)
        elif len(self.extra[fd]) + len(data) > self._extra_cap[fd]:
            self.overflowed.add(fd)
            self._close(fd)
            return 0
        else:
            self.extra[fd] += data
        return len(data)

    def _status(self, data: bytes) -> None:
        self._status_buf += data
        if len(self._status_buf) > _STATUS_MAX:
            self._status_buf.clear()
        while b"\n" in self._status_buf:
            line, _, rest = self._status_buf.partition(b"\n")
            self._status_buf = bytearray(rest)
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict) and len(self.events) < _EVENTS_MAX:
                    self.events.append(message)

    def _close(self, fd: int) -> None:
        """Stops reading ``fd``; closes it unless the Popen object owns it (stdout, stderr)."""
        kind = self._open.pop(fd, None)
        if kind in ("status", "extra"):
            os.close(fd)

    # -- ending --------------------------------------------------------------------------------

    def program_pid(self) -> int | None:
        """The program's pid as the harness sees it (for interrupting a shell's command)."""
        ready = self.event("ready")
        if ready is None or self.popen.poll() is not None:
            return None
        return _procs.host_pid(self.popen.pid, int(ready["child"]))

    def kill(self) -> None:
        """Kills every process of the sandbox, whatever it did to escape, and waits for them."""
        if self.popen.poll() is None:
            # Only while the wrapper is unreaped is its pid surely still ours to kill.
            _procs.kill_tree(self.popen.pid)
        if self.cgroup is not None:
            self.cgroup.kill()
        ready = self.event("ready")
        if ready and ready.get("pidns") and self.level is not IsolationLevel.PROCESS:
            _procs.kill_processes(_procs.pids_in_namespace(str(ready["pidns"])))
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
        self.pump(time.monotonic() + 1.0)

    def close(self) -> None:
        """Kills what is left and releases every descriptor."""
        if self.popen.poll() is None or not self.finished:
            self.kill()
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        for fd in list(self._open):
            self._close(fd)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._release()

    def _release(self) -> None:
        if self.hold is not None:
            self.release_warnings += self.hold.release()
            self.hold = None
            self.cgroup = None

    def outcome(self, *, timed_out: bool) -> Outcome:
        """How the program ended, from the launcher's report (or the wrapper's exit status)."""
        exit_event = self.event("exit")
        error = self.event("error")
        if exit_event is not None:
            code = exit_event.get("code")
            sig = exit_event.get("signal")
            cpu = float(exit_event.get("cpu") or 0.0)
        else:
            returncode = self.popen.poll()
            code = returncode if returncode is not None and returncode >= 0 else None
            sig = -returncode if returncode is not None and returncode < 0 else None
            cpu = None
        if timed_out:
            code, sig = None, int(signal.SIGKILL)
        tree_cpu = self.cpu_used()
        if tree_cpu is not None and self.cpu_budget is None:
            cpu = tree_cpu  # the whole tree, not just the children the program waited for
        killed = self._killed_reason(timed_out, code, sig, cpu)
        name = signal.Signals(sig).name if sig else None
        return Outcome(code, name, killed, cpu, str(error["message"]) if error else None)

    def _killed_reason(
        self, timed_out: bool, code: int | None, sig: int | None, cpu: float | None
    ) -> str | None:
        if timed_out:
            return "wall-clock timeout"
        if self.cpu_exceeded:
            return "cpu limit"
        if self.cgroup is not None and self.cgroup.oom_kills():
            return "memory limit"
        if sig == signal.SIGXCPU or (
            sig == signal.SIGKILL and cpu is not None and cpu >= self.limits.cpu_seconds - 0.05
        ):
            return "cpu limit"
        if sig == signal.SIGXFSZ:
            return "file size limit"
        if code != 0 and _MEMORY_ERRORS.search(self.stderr.text()[-4000:]):
            return "memory limit"
        return None


_MEMORY_ERRORS = re.compile(r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory")


@dataclass(frozen=True)
class Outcome:
    """How a sandboxed program ended."""

    exit_code: int | None
    signal: str | None
    killed: str | None
    cpu_s: float | None
    error: str | None
    """The launcher's message when the program could not be started."""
