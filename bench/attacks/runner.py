"""Running the table: one attack at one level (``run_attack``), the scratch folder and
interpreters it needs, the start-up timings (``--overhead``), and the command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from attacks.registry import ATTACKS, Ctx
from omnilab.sandbox import IsolationLevel, PythonSession, SandboxError, run
from omnilab.sandbox._isolation import resolve_level
from omnilab.sandbox._plan import closed_ancestor


def interpreter_for(level: IsolationLevel) -> str | None:
    """An interpreter the level's sandbox can run: the harness's own, or (process level, root
    harness, own interpreter out of a stranger's reach) the system's."""
    if level is not IsolationLevel.PROCESS or os.geteuid() != 0:
        return sys.executable
    for candidate in (sys.executable, "/usr/bin/python3"):
        real = os.path.realpath(candidate)
        if Path(real).exists() and closed_ancestor(real) is None:
            return candidate
    return None


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A folder a sandbox's own uid can pass through (in the system's temporary folder)."""
    root = Path(tempfile.mkdtemp(prefix="omnilab-attacks-"))
    root.chmod(0o711)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def available_levels(wanted: list[str]) -> list[IsolationLevel]:
    levels = []
    for name in wanted:
        with contextlib.suppress(SandboxError):
            levels.append(resolve_level(name))
    return levels


def run_attack(name: str, level: IsolationLevel, root: Path) -> tuple[str, str]:
    """``(verdict, detail)``: verdict is contained, escaped, or n/a."""
    python = interpreter_for(level)
    if python is None:
        return "n/a", "no interpreter the sandbox uid can reach"
    ctx = Ctx(level, root, python)
    try:
        contained, detail = ATTACKS[name](ctx)
    except SandboxError as exc:
        return "refused", str(exc)
    return ("contained" if contained else "escaped"), detail


def overhead(n: int) -> None:
    """Prints session start-up, per-call and one-shot ``run`` times at the default level (the
    figures of docs/performance.md; compare two versions by running both at the same time)."""

    starts: list[float] = []
    calls: list[float] = []
    runs: list[float] = []
    with scratch() as root:
        for i in range(n):
            ws = root / f"ws{i}"
            ws.mkdir()
            with PythonSession(ws) as py:
                t = time.perf_counter()
                py.run("1")
                starts.append(time.perf_counter() - t)
                for _ in range(20):
                    t = time.perf_counter()
                    py.run("x = 1")
                    calls.append(time.perf_counter() - t)
            t = time.perf_counter()
            run(["true"], workspace=ws)
            runs.append(time.perf_counter() - t)
    for name, xs in (("session start-up", starts), ("per call", calls), ("run(['true'])", runs)):
        p10 = sorted(xs)[len(xs) // 10] * 1000
        print(f"{name:17} median {statistics.median(xs) * 1000:8.3f} ms  p10 {p10:8.3f} ms")


def main(description: str) -> None:
    """The command line of ``bench/sandbox_attacks.py`` (``description`` is its ``--help`` line)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--levels", default="bwrap,namespaces,process")
    parser.add_argument("--markdown", action="store_true", help="Print a Markdown table.")
    parser.add_argument(
        "--overhead", type=int, metavar="N", help="Time N sandbox starts instead of attacking."
    )
    args = parser.parse_args()
    if args.overhead:
        overhead(args.overhead)
        return
    levels = available_levels(args.levels.split(","))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rows: dict[str, list[str]] = {}
    with scratch() as root:
        for name in ATTACKS:
            rows[name] = []
            for level in levels:
                verdict, detail = run_attack(name, level, root)
                rows[name].append(verdict)
                print(f"{name:42} {level.value:11} {verdict:9} {detail}", file=sys.stderr)
    heads = [
        f"{lvl.value} (own uid)"
        if lvl is IsolationLevel.PROCESS and os.geteuid() == 0
        else lvl.value
        for lvl in levels
    ]
    if args.markdown:
        print("| attack | " + " | ".join(heads) + " |")
        print("|---" * (len(heads) + 1) + "|")
        for name, verdicts in rows.items():
            print(f"| {name} | " + " | ".join(verdicts) + " |")
    else:
        print(f"{'attack':42} " + " ".join(f"{h:20}" for h in heads))
        for name, verdicts in rows.items():
            print(f"{name:42} " + " ".join(f"{v:20}" for v in verdicts))
    escaped = sum(v == "escaped" for vs in rows.values() for v in vs[:1])
    print(f"\nescapes at the strongest level ({levels[0].value}): {escaped}" if levels else "")
