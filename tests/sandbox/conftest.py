"""Sandbox fixtures: a workspace per test, the levels this machine offers, a leftover scan."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from omnilab.config import SandboxLimits, get_settings
from omnilab.sandbox import IsolationLevel, SandboxError
from omnilab.sandbox._isolation import resolve_level


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture()
def limits() -> SandboxLimits:
    """Small limits so that every attack ends in seconds."""
    return SandboxLimits(
        cpu_seconds=5,
        memory_bytes=1024**3,
        file_size_bytes=16 * 1024**2,
        max_processes=32,
        wall_seconds=10,
        output_bytes=4000,
    )


@pytest.fixture()
def token() -> str:
    """A unique string to put in sandboxed command lines, to find their processes later."""
    return f"omnilabtoken{uuid.uuid4().hex}"


def _available(level: str) -> IsolationLevel:
    """The level, or skip the test when this machine does not offer it."""
    try:
        return resolve_level(level)
    except SandboxError as exc:
        pytest.skip(str(exc))


def _strong(request: pytest.FixtureRequest, level: str, what: str) -> IsolationLevel:
    """The level for a test of something only ``bwrap`` and ``namespaces`` block: at the
    ``process`` level the test still runs, as a strict expected failure that documents the gap
    (it must fail, i.e. the attack must really get through)."""
    resolved = _available(level)
    if resolved is IsolationLevel.PROCESS:
        reason = f"the process level does not block {what}"
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    return resolved


def _processes_with(token: str, *, wait: float = 0.0) -> list[int]:
    """Live processes whose command line contains ``token`` (zombies have none); ``wait``
    seconds for one to show up (a process's command line appears a moment after exec returns
    in its parent, so a just-started one can be missed)."""
    deadline = time.monotonic() + wait
    found = _scan(token)
    while not found and time.monotonic() < deadline:
        time.sleep(0.02)
        found = _scan(token)
    return found


def _scan(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _as_root_at_process_level(level: IsolationLevel, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest workspaces (under the 0700 ``/tmp/pytest-of-root``) cannot be reached by the
    process level's own uid: with a root harness, the generic attack tests run that level with
    the unsafe opt-in (as before it existed); ``test_process_level.py`` tests the uid drop."""
    if level is IsolationLevel.PROCESS and os.geteuid() == 0:
        monkeypatch.setenv("OMNILAB_SANDBOX__UNSAFE_PROCESS_AS_ROOT", "1")
        get_settings.cache_clear()


@pytest.fixture()
def available(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], IsolationLevel]:
    """``available(level)``: the level, or skip when this machine does not offer it."""

    def get(level: str) -> IsolationLevel:
        resolved = _available(level)
        _as_root_at_process_level(resolved, monkeypatch)
        return resolved

    return get


@pytest.fixture()
def strong(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, str], IsolationLevel]:
    """``strong(level, what)``: the level; at ``process`` a strict xfail naming the gap."""

    def get(level: str, what: str) -> IsolationLevel:
        resolved = _strong(request, level, what)
        _as_root_at_process_level(resolved, monkeypatch)
        return resolved

    return get


@pytest.fixture()
def processes_with() -> Callable[..., list[int]]:
    """``processes_with(token, wait=0)``: live processes whose command line holds ``token``."""
    return _processes_with
