"""What starts one sandbox: the request (:class:`Launch`) and the command line that runs the
launcher program with its configuration (:func:`launcher_argv`). :class:`._spawn.SandboxProcess`
starts that command line and talks to the result."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from omnilab.config import SandboxLimits
from omnilab.sandbox._plan import MountPlan, wrapper_argv
from omnilab.sandbox._seccomp import filter_program
from omnilab.sandbox._types import IsolationLevel

__all__ = ["Launch", "launcher_argv", "launcher_source"]

_NOFILE = 1024


@cache
def launcher_source() -> str:
    """The launcher program (``python -I -S -c`` runs it in the sandbox): :mod:`._launcher`'s
    text, then its mount half's (:mod:`._launcher_fs`), then the call of ``main()``."""
    here = Path(__file__).parent
    parts = [(here / name).read_text() for name in ("_launcher.py", "_launcher_fs.py")]
    return "\n".join([*parts, "main()\n"])


@dataclass
class Launch:
    """Everything needed to start one sandboxed program."""

    command: list[str]
    workspace: Path
    level: IsolationLevel
    limits: SandboxLimits
    env: Mapping[str, str]
    network: bool = False
    uid_base: int = 200_000
    stdin_pipe: bool = False
    fd_map: Mapping[int, int] | None = None
    """Descriptors the program gets: number in the program -> child end in the harness. The
    sandbox owns (and always closes) those child ends."""
    cpu_per_process: bool = True
    """False for a persistent session: each process gets ``limits.session_cpu_seconds`` of CPU
    over its life, and the harness counts each call's CPU over the whole tree."""
    as_root: bool = False
    """The ``process`` level with a root harness: run as root (the loud opt-in) instead of
    dropping to a uid of its own."""


def launcher_argv(
    launch: Launch,
    plan: MountPlan,
    *,
    workspace: Path,
    ids: tuple[int, int] | None,
    status_fd: int,
    lifeline_fd: int,
    cgroup_fds: list[int],
) -> list[str]:
    """The command line that starts ``launch``'s sandbox: the level's wrapper, then the launcher
    program with its JSON configuration (limits, credentials, descriptors, the mount ``plan``)
    and the descriptors of the cgroups it joins."""
    limits = launch.limits
    cpu = limits.cpu_seconds if launch.cpu_per_process else limits.session_cpu_seconds
    cpu_soft = max(1, round(cpu))
    rlimits: dict[str, list[int]] = {
        # Hard one second later: SIGXCPU first (reported as such), SIGKILL if ignored.
        "CPU": [cpu_soft, cpu_soft + 1],
        "AS": [limits.memory_bytes] * 2,
        "FSIZE": [limits.file_size_bytes] * 2,
        "CORE": [0, 0],
        "NOFILE": [_NOFILE, _NOFILE],
    }
    if ids is not None:
        rlimits["NPROC"] = [limits.max_processes] * 2
    seccomp = filter_program()
    config: dict[str, Any] = {
        "seccomp": seccomp.hex() if seccomp else None,
        "status_fd": status_fd,
        "lifeline_fd": lifeline_fd,
        "fd_map": [[t, s] for t, s in (launch.fd_map or {}).items()],
        "argv": launch.command,
        "cwd": str(workspace),
        "rlimits": rlimits,
        "uid": ids[0] if ids else None,
        "gid": ids[1] if ids else None,
        "drop_caps": launch.level is IsolationLevel.NAMESPACES and os.geteuid() != 0,
        "mounts": plan.launcher_config() if launch.level is IsolationLevel.NAMESPACES else None,
    }
    wrapper = wrapper_argv(launch.level, network=launch.network, plan=plan, workspace=workspace)
    argv = [*wrapper, sys.executable, "-I", "-S", "-c", launcher_source(), json.dumps(config)]
    argv.append(",".join(map(str, cgroup_fds)))
    return argv
