"""The attacks of ``bench/sandbox_attacks.py`` (issue 11's escapes and the older ones), as tests:
each must be contained wherever ``PROMISED`` says so. The new escapes run at the default level in
every test run; the whole catalogue at every level is marked slow."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from omnilab.config import get_settings
from omnilab.sandbox import IsolationLevel, SandboxError
from omnilab.sandbox._isolation import resolve_level


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "sandbox_attacks.py"
    spec = importlib.util.spec_from_file_location("sandbox_attacks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sandbox_attacks"] = module
    spec.loader.exec_module(module)
    return module


attacks = _load()
NAMES = list(attacks.ATTACKS)
# Everything from the first attack of issue 11 on is new; the earlier ones are also covered
# (with finer assertions) by test_attacks.py.
ISSUE_11 = NAMES[NAMES.index("read omnilab.toml beside the harness") :]


@pytest.fixture()
def root() -> Iterator[Path]:
    with attacks.scratch() as folder:
        yield folder


@pytest.fixture(autouse=True)
def _harness_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The harness's cwd is the repository; keep it (the config attack changes it itself).
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    get_settings.cache_clear()


def _check(name: str, level: IsolationLevel, root: Path) -> None:
    verdict, detail = attacks.run_attack(name, level, root)
    if verdict == "n/a":
        pytest.skip(detail)
    mode = attacks.Ctx(level, root, sys.executable).mode
    if mode in attacks.PROMISED[name]:
        assert verdict == "contained", f"{name} escaped at {mode}: {detail}"
    elif verdict == "escaped":
        pytest.xfail(f"the {mode} level does not promise to contain {name!r}: {detail}")


@pytest.mark.parametrize("name", ISSUE_11)
def test_issue_11_attacks_are_contained_at_the_default_level(name: str, root: Path) -> None:
    _check(name, resolve_level(None), root)


@pytest.mark.slow
@pytest.mark.parametrize("level", ["bwrap", "namespaces", "process"])
@pytest.mark.parametrize("name", ISSUE_11)
def test_issue_11_attacks_at_the_other_levels(name: str, level: str, root: Path) -> None:
    # The older attacks run at every level in test_attacks.py already.
    try:
        resolved = resolve_level(level)
    except SandboxError as exc:
        pytest.skip(str(exc))
    if resolved is resolve_level(None):
        pytest.skip("the default level runs in the test above")
    _check(name, resolved, root)


def test_the_catalogue_covers_the_issue() -> None:
    wanted = {
        "read omnilab.toml beside the harness",  # 1: sys.path / cwd mounted back
        "perception serves a planted link",  # 2: links followed by the harness
        "perception writes through a planted link",
        "read another live workspace",  # 3: shared uids
        "switch off the per-call CPU timer",  # 4: CPU
        "burn CPU between calls",
        "RLIMIT_CPU missing in a session",
        "hold memory in many processes",  # 5: totals
        "fill the disk from the workspace",
        "exhaust inodes in the workspace",
        "create a user namespace",  # also-found
        "open /dev/fuse and /dev/net/tun",
        "ptrace, bpf, io_uring, keyctl, mount",
        "plant a dangling tmp link",
        "read the harness's /proc/PID/environ",
        "kill a harness process",
        "daemon kills its launcher",
    }
    assert wanted <= set(ISSUE_11)
    assert Path(attacks.__file__ or "").name == "sandbox_attacks.py"
