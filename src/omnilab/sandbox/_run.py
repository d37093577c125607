"""One sandboxed command, start to finish: :func:`run`."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from omnilab.config import SandboxLimits, get_settings
from omnilab.sandbox._env import sandbox_env
from omnilab.sandbox._isolation import resolve_level
from omnilab.sandbox._launch import Launch
from omnilab.sandbox._plan import package_import_path
from omnilab.sandbox._spawn import SandboxProcess
from omnilab.sandbox._types import ExecResult, IsolationLevel, SandboxError

__all__ = ["run", "sandbox_warnings", "start_sandbox"]

_PROCESS_WARNING = (
    "isolation level 'process': this code could read and write files outside its workspace "
    "and reach the network (install bubblewrap, or run where unshare works, to block them)"
)


_ROOT_WARNING = (
    "UNSAFE: this code ran as root (sandbox.unsafe_process_as_root): it could read every secret "
    "on this machine and take it over"
)


def sandbox_warnings(
    level: IsolationLevel, refused: Sequence[str], *, as_root: bool = False
) -> list[str]:
    """What a result should tell its reader about how the code was (not) isolated."""
    warnings = [_PROCESS_WARNING] if level is IsolationLevel.PROCESS else []
    if as_root:
        warnings.append(_ROOT_WARNING)
    if refused:
        warnings.append(
            "environment variables not passed because they look like secrets: "
            + ", ".join(sorted(refused))
            + " (allow them by name in sandbox.allow_env)"
        )
    return warnings


def start_sandbox(
    command: Sequence[str],
    *,
    workspace: Path | str,
    limits: SandboxLimits | None,
    network: bool | None,
    env: Mapping[str, str] | None,
    isolation: IsolationLevel | str | None,
    stdin_pipe: bool = False,
    fd_map: Mapping[int, int] | None = None,
    cpu_per_process: bool = True,
) -> tuple[SandboxProcess, list[str]]:
    """Starts a sandboxed program with the settings' defaults filled in; also returns the
    warnings its results should carry. The child ends in ``fd_map`` are closed whatever
    happens."""
    try:
        if not command:
            raise SandboxError("sandbox command is empty; pass the program and its arguments")
        settings = get_settings().sandbox
        level = resolve_level(isolation)
        ws = Path(workspace)
        package = package_import_path()
        if package is not None and "PYTHONPATH" not in (env or {}):
            # Only omnilab's package folder of that checkout is shown in the sandbox.
            env = {"PYTHONPATH": package, **(env or {})}
        environment, refused = sandbox_env(
            ws.resolve() if ws.is_dir() else ws,
            env,
            allow=settings.allow_env,
            # The harness's interpreter first, so `python` in the sandbox has the same packages.
            path_prefix=[str(Path(sys.executable).parent)],
        )
    except BaseException:
        for fd in (fd_map or {}).values():  # owned by the sandbox from the call on
            os.close(fd)
        raise
    proc = SandboxProcess(
        Launch(
            command=list(command),
            workspace=ws,
            level=level,
            limits=limits or settings.limits,
            env=environment,
            network=settings.network if network is None else network,
            uid_base=settings.uid_base,
            as_root=level is IsolationLevel.PROCESS and settings.unsafe_process_as_root,
            stdin_pipe=stdin_pipe,
            fd_map=fd_map,
            cpu_per_process=cpu_per_process,
        )
    )
    as_root = proc.ids is None and os.geteuid() == 0
    return proc, [*sandbox_warnings(level, refused, as_root=as_root), *proc.hold_warnings]


def run(
    command: Sequence[str],
    *,
    workspace: Path | str,
    limits: SandboxLimits | None = None,
    network: bool | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | str | None = None,
    isolation: IsolationLevel | str | None = None,
) -> ExecResult:
    """Runs ``command`` in the sandbox and returns what it did; never raises for what the
    program does (crash, timeout, flood), only for a sandbox that cannot start.

    Args:
        command: The program and its arguments (no shell; use ``["bash", "-c", ...]`` for one).
        workspace: An existing folder: the working directory, ``HOME`` and the only writable
            place. Its files are handed to the sandbox's uid when the harness is root.
        limits: Resource limits; default ``sandbox.limits`` from the settings.
        network: Allow the network; default ``sandbox.network`` (off).
        env: Extra environment variables; names that look like secrets are dropped unless
            listed in ``sandbox.allow_env``.
        stdin: Bytes (or text) for the program's standard input; default none (``/dev/null``).
        isolation: A level by name or ``auto``; default ``sandbox.isolation``.

    Raises:
        SandboxError: The workspace is not a folder, or the requested isolation is unavailable.
    """
    proc, warnings = start_sandbox(
        command,
        workspace=workspace,
        limits=limits,
        network=network,
        env=env,
        isolation=isolation,
        stdin_pipe=stdin is not None,
    )
    try:
        # Each process has its RLIMIT_CPU; this bounds the whole tree (many processes).
        proc.cpu_budget = (0.0, proc.limits.cpu_seconds + 1.0)
        if stdin is not None:
            proc.send(stdin.encode() if isinstance(stdin, str) else stdin, then_close=True)
        finished = proc.pump(proc.started + proc.limits.wall_seconds)
        if not finished:
            proc.kill()
        proc.cpu_budget = None
        outcome = proc.outcome(timed_out=not finished)
        missing = proc.missing_totals
    finally:
        proc.close()
    if outcome.error and outcome.error.startswith("sandbox setup failed"):
        raise SandboxError(outcome.error)
    stderr = proc.stderr.text()
    if outcome.error:
        stderr += f"\nsandbox: {outcome.error}\n"
    return ExecResult(
        exit_code=outcome.exit_code,
        signal=outcome.signal,
        stdout=proc.stdout.text(),
        stderr=stderr,
        stdout_bytes=proc.stdout.total,
        stderr_bytes=proc.stderr.total,
        timed_out=not finished,
        killed=outcome.killed,
        duration_s=round(time.monotonic() - proc.started, 3),
        cpu_s=outcome.cpu_s,
        isolation=proc.level,
        network=proc.network,
        missing_totals=missing,
        warnings=[*warnings, *proc.release_warnings],
    )
