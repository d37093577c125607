"""The README's install commands, timed in a fresh copy of the repository.

Usage::

    python bench/install.py [--which demo|tests] [--cache empty|keep|DIR] [--run]

Copies the tracked files into a temporary folder (as ``.ci/run`` does), then runs the install
part of the README's first (``demo``) or second (``tests``) command there: a new virtualenv, the
portable ``CMAKE_ARGS``, ``pip install``. ``--cache empty`` points the command's pip cache folder
at a new empty one (a fresh machine); ``keep`` uses the README's own (``~/.cache/omnilab/pip``,
a second install); a folder uses that one (e.g. a copy of an earlier run's). ``--run`` then runs the rest of the command (the demo, or the tests) and
times it too. Prints the seconds of each part.

Figures in README.md and docs/models.md ("A portable runtime").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = "~/.cache/omnilab/pip"


def readme_command(which: str) -> tuple[str, str]:
    """The install part and the rest of the README's ``demo`` or ``tests`` command."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    demo, tests = [line for line in lines if line.startswith("python3 -m venv .venv")]
    command = demo if which == "demo" else tests
    rest = " && omnilab demo" if which == "demo" else " && pytest -q"
    install, _, after = command.partition(rest)
    return install, rest.removeprefix(" && ") + after


def copy_repo(target: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            dest = target / os.fsdecode(name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(source.read_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--which", choices=["demo", "tests"], default="demo")
    parser.add_argument("--cache", default="empty", help="empty, keep, or a pip cache folder")
    parser.add_argument("--run", action="store_true", help="run the demo or the tests after")
    args = parser.parse_args()
    install, rest = readme_command(args.which)
    with tempfile.TemporaryDirectory(prefix="omnilab-install-") as tmp:
        repo = Path(tmp) / "omnilab"
        copy_repo(repo)
        if args.cache == "empty":
            install = install.replace(CACHE, str(Path(tmp) / "pip-cache"))
        elif args.cache != "keep":
            install = install.replace(CACHE, str(Path(args.cache).resolve()))
        print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; in {repo}")
        print(f"$ {install}", flush=True)
        began = time.perf_counter()
        subprocess.run(["bash", "-c", install + " >install.log 2>&1"], cwd=repo, check=True)
        print(f"install: {time.perf_counter() - began:.0f} s", flush=True)
        if args.run:
            began = time.perf_counter()
            done = subprocess.run(
                ["bash", "-c", f". .venv/bin/activate && {rest}"],
                cwd=repo,
                capture_output=True,
                text=True,
                check=False,
            )
            print(done.stdout[-1500:])
            print(f"{rest.split()[0]}: {time.perf_counter() - began:.0f} s, exit {done.returncode}")


if __name__ == "__main__":
    main()
