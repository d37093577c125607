"""What a persistent sandboxed process (interpreter or shell) shares: settings and lifecycle."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from omnilab.config import SandboxLimits, get_settings
from omnilab.sandbox._spawn import SandboxProcess
from omnilab.sandbox._types import IsolationLevel

__all__ = ["Session"]


class Session:
    """Base of :class:`PythonSession` and :class:`ShellSession`; subclasses define ``_stop``."""

    def __init__(
        self,
        workspace: Path | str,
        *,
        limits: SandboxLimits | None = None,
        network: bool | None = None,
        env: Mapping[str, str] | None = None,
        isolation: IsolationLevel | str | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.limits = limits or get_settings().sandbox.limits
        self._network = network
        self._env = dict(env or {})
        self._isolation = isolation
        self._proc: SandboxProcess | None = None
        self._warnings: list[str] = []
        self.restarts = 0
        """Times the process had to be started again, losing its state."""

    def _stop(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Kills the process and everything it started; the session can start again."""
        self._stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # A forgotten session must not leave a process running (the launcher's lifeline also
        # ends it when this process exits).
        if getattr(self, "_proc", None) is not None:
            with contextlib.suppress(Exception):
                self._stop()
