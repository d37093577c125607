"""The attack table: the ``attack`` decorator, the context an attack runs in (``Ctx``), what
it returns (``Verdict``), the level sets ``PROMISED`` names, and the limits every attack runs
under (small, so that a shared machine survives them)."""

from __future__ import annotations

import os
import textwrap
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from omnilab.config import SandboxLimits
from omnilab.sandbox import IsolationLevel, PythonSession, run

Verdict = tuple[bool, str]
STRONG = frozenset({"bwrap", "namespaces"})
ALL = frozenset({"bwrap", "namespaces", "process+uid", "process"})
OWN_UID = frozenset({"bwrap", "namespaces", "process+uid"})

LIMITS = SandboxLimits(
    cpu_seconds=2,
    memory_bytes=256 * 1024**2,
    file_size_bytes=16 * 1024**2,
    max_processes=48,
    wall_seconds=15,
    output_bytes=4000,
    workspace_bytes=64 * 1024**2,
    workspace_inodes=2000,
)


@dataclass
class Ctx:
    """Where and how one attack runs."""

    level: IsolationLevel
    root: Path
    """A scratch folder the sandbox's own uid can pass through (mode 0711)."""
    python: str
    """An interpreter that uid can run."""
    limits: SandboxLimits = field(default_factory=lambda: LIMITS)

    @property
    def mode(self) -> str:
        """The level as ``PROMISED`` names it."""
        if self.level is IsolationLevel.PROCESS and os.geteuid() == 0:
            return "process+uid"
        return self.level.value

    def ws(self) -> Path:
        path = self.root / f"ws-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        return path

    def run(self, code: str, **kw: object) -> tuple[str, str]:
        limits = kw.pop("limits", self.limits)
        ws = kw.pop("ws", None) or self.ws()
        r = run(
            [self.python, "-c", textwrap.dedent(code)],
            workspace=ws,  # type: ignore[arg-type]
            limits=limits,  # type: ignore[arg-type]
            isolation=self.level,
            **kw,  # type: ignore[arg-type]
        )
        return r.stdout, f"exit {r.exit_code}, killed {r.killed}"

    def session(self, ws: Path | None = None, **kw: object) -> PythonSession:
        limits = kw.pop("limits", self.limits)
        return PythonSession(
            ws or self.ws(),
            limits=limits,  # type: ignore[arg-type]
            isolation=self.level,
            python=self.python,
        )


ATTACKS: dict[str, Callable[[Ctx], Verdict]] = {}
PROMISED: dict[str, frozenset[str]] = {}


def attack(name: str, promised: frozenset[str]) -> Callable[..., Callable[[Ctx], Verdict]]:
    def register(fn: Callable[[Ctx], Verdict]) -> Callable[[Ctx], Verdict]:
        ATTACKS[name] = fn
        PROMISED[name] = promised
        return fn

    return register
