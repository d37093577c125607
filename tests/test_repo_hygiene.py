"""A checkout stays clean and portable: no tracked file holds a path of one machine, and the
demo writes nothing into the folder it is run from (often a checkout of omnilab)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
# Built from pieces so this file does not match itself.
MACHINE_PATH = re.compile(
    "(?<![\\w.~])/(" + "|".join(["root", "home", "work", "tmp", "Users"]) + ")/"
)
ALLOWED: dict[str, tuple[str, ...]] = {
    # Secrets a sandboxed program must not read: attack targets, not paths of this machine.
    "tests/agents/test_code_tool.py": ("/" + "root/.ssh/",),
    "tests/sandbox/test_attacks.py": ("/" + "root/.ssh/",),
    # pytest's own folder, named to explain why the sandbox cannot reach it.
    "tests/sandbox/conftest.py": ("/" + "tmp/pytest-of-root",),
    # Commands model-written code runs: the sandbox's private /tmp, and a path outside it.
    "tests/bench/test_code_x_rules.py": ("/" + "tmp/", "/" + "root/x"),
    "tests/agents/test_coder_reward_cases.py": ("/" + "tmp/omnilab-i36-frame.png",),
}
_SKIPPED_DIRS = {".git", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def repository_files() -> list[Path]:
    """Tracked files (and untracked ones git does not ignore); without git (CI tests a copy
    without .git), every file that no ``.gitignore`` pattern covers (read simply: a pattern
    matches a path part), outside the tool folders."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        return [ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file()]
    ignore = ROOT / ".gitignore"
    patterns = [
        line.strip().strip("/")
        for line in (ignore.read_text().splitlines() if ignore.is_file() else [])
        if line.strip() and not line.startswith("#")
    ]
    return [
        p
        for p in ROOT.rglob("*")
        if p.is_file()
        and not _SKIPPED_DIRS.intersection(p.relative_to(ROOT).parts)
        and not any(fnmatch(part, pat) for part in p.relative_to(ROOT).parts for pat in patterns)
    ]


def test_no_tracked_file_holds_a_machine_specific_path() -> None:
    found = []
    for path in repository_files():
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        name = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            hit = MACHINE_PATH.search(line)
            if hit and not any(allowed in line for allowed in ALLOWED.get(name, ())):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not found, "machine-specific paths:\n" + "\n".join(found)


def test_no_demo_output_is_committed() -> None:
    names = {p.relative_to(ROOT).parts[0] for p in repository_files()}
    assert "omnilab-demo" not in names and "omnilab-runs" not in names
    assert not [
        p for p in repository_files() if p.suffix in (".mp4", ".jsonl") and "demo" in p.name
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_demo_leaves_git_status_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone = tmp_path / "checkout"
    clone.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    (clone / "README.md").write_text("a checkout\n")
    subprocess.run([*git, "init", "-q"], cwd=clone, check=True)
    subprocess.run([*git, "add", "-A"], cwd=clone, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=clone, check=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["<answer>omnilab demo</answer>"]))
    monkeypatch.chdir(clone)
    result = CliRunner().invoke(app, ["demo", "--model", f"scripted:{script}"])
    assert result.exit_code == 0, result.output
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""
    # The run went to the cache folder (the test's, see conftest), and the demo said where.
    saved = tmp_path / "cache" / "demo" / "run" / "trajectory.jsonl"
    assert saved.is_file() and str(saved) in result.output.replace("\n", "")
