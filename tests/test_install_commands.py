"""The README's two commands build the embedded runtime portably, and CI runs the test command
verbatim."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from omnilab.models.providers import local_runtime

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return [line for line in readme.splitlines() if line.startswith("python3 -m venv .venv")]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    demo, tests = _commands()
    assert "omnilab demo" in demo and "pytest -q" in tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci


def test_ci_runs_the_training_tests_as_a_second_stage() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    (train,) = [line for line in readme if line.startswith(". .venv/bin/activate && pip")]
    assert '".[dev,local,train]"' in train and "pytest -q -m train" in train
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    _, tests = _commands()
    assert ci.index(train) > ci.index(tests)


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        ("x86_64", local_runtime._X86_BASELINE),
        ("aarch64", local_runtime._GENERIC),
        ("arm64", local_runtime._GENERIC),
    ],
)
def test_both_commands_set_the_portable_flags_and_their_own_cache(
    tmp_path: Path, machine: str, expected: str
) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    fake = tmp_path / "uname"
    fake.write_text(f"#!/bin/sh\necho {machine}\n")
    fake.chmod(0o755)
    for command in _commands():
        # Run the command's CMAKE_ARGS export on a machine that says it is `machine`.
        export = command[command.index("export CMAKE_ARGS=") : command.index(" && pip install")]
        done = subprocess.run(
            [bash, "-c", f'{export} && printf %s "$CMAKE_ARGS"'],
            env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout == expected
        # Pip's default cache may hold a native wheel of the same version: not consulted.
        assert "pip install --cache-dir ~/.cache/omnilab/pip " in command


def test_the_fix_names_the_same_flags_and_skips_every_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_runtime.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(local_runtime, "_cpu_flags", lambda: {"avx2", "fma", "f16c", "avx512f"})
    fix = local_runtime.reinstall_command()
    assert fix.startswith(f'CMAKE_ARGS="{local_runtime._X86_BASELINE}" pip install')
    assert "--force-reinstall" in fix and "--no-cache-dir" in fix
    # A CPU without AVX2 gets plain x86-64 rather than a build it would trap too.
    monkeypatch.setattr(local_runtime, "_cpu_flags", lambda: {"sse4_2"})
    assert "-DGGML_AVX2=OFF" in local_runtime.reinstall_command()
    monkeypatch.setattr(local_runtime.platform, "machine", lambda: "aarch64")
    assert local_runtime.reinstall_command().startswith('CMAKE_ARGS="-DGGML_NATIVE=OFF" pip')


@pytest.mark.parametrize(("first", "code"), [("true && false && true", 1), ("true && true", 0)])
def test_ci_stops_when_the_readme_test_command_fails(first: str, code: int) -> None:
    """``set -e`` ignores a failure inside an ``&&`` list unless it is the list's last command,
    so a failing ``pytest`` in the README's command once let ``.ci/run`` go on to its second
    stage and exit 0: the line after the command must stop CI with the command's status."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    _, tests = _commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    guard = ci[ci.index(tests) + 1]
    script = f"set -euo pipefail\n{first}\n{guard}\ntrue\n"
    done = subprocess.run([bash, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == code
    assert ("the README test command failed" in done.stderr) == bool(code)
