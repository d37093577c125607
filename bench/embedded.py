"""Embedded models on the offline suite: accuracy, seconds per task, accuracy per second.

Usage::

    python bench/embedded.py [--models local:smollm2,local:gemma3-270m] [--settings all]
        [--limit N] [--out DIR]

Each setting is one ``omnilab eval offline-suite`` run (the real CLI, one task at a time, so the
seconds are per task on this machine): the ``tir`` agent in ``evidence`` mode (the media reach
the model as the offline digest's text), with

- ``tools``: the default read_* / web / code tools (the grammar admits only offered tools),
- ``no-tools``: no tools, OmniAtlas system prompt,
- ``base``: no tools, the base (B.2) system prompt.

Prints one row per model x setting and the choice by accuracy per second. Figures in
docs/performance.md ("Embedded defaults").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS: dict[str, list[str]] = {
    "tools": [],
    "no-tools": ["--tools", ""],
    "base": ["--tools", "", "-O", "variant=base"],
}
COMMON = [
    "--agent-option",
    "mode=evidence",
    "-O",
    'generate={"max_tokens": 128, "temperature": 0, "seed": 0}',
    "-O",
    "max_observation_chars=1200",
    "--max-turns",
    "3",
    "--concurrency",
    "1",
    "--no-progress",
]


def run_one(model: str, setting: str, out: Path, limit: int | None) -> dict[str, float]:
    """One eval run; returns accuracy, tasks and seconds per task."""
    args = ["omnilab", "eval", "offline-suite", "--model", model, "--out", str(out)]
    args += COMMON + SETTINGS[setting] + (["--limit", str(limit)] if limit else [])
    began = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"{model} {setting} failed:\n{done.stderr[-2000:]}")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    correct = sum(1 for r in rows if r.get("score") and r["score"]["correct"])
    return {"tasks": len(rows), "correct": correct, "seconds": wall / max(1, len(rows))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="local:smollm2,local:gemma3-270m")
    parser.add_argument("--settings", default="all", help="comma-separated, or all")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    settings = list(SETTINGS) if args.settings == "all" else args.settings.split(",")
    root = args.out or Path(tempfile.mkdtemp(prefix="omnilab-embedded-"))
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; runs under {root}")
    print(f"{'model':<22} {'setting':<9} {'right':>7} {'acc':>5} {'s/task':>7} {'acc/s':>7}")
    best: tuple[float, str, str] | None = None
    for model in args.models.split(","):
        for setting in settings:
            folder = root / f"{model.replace(':', '_').replace('/', '_')}-{setting}"
            got = run_one(model, setting, folder, args.limit)
            acc = got["correct"] / max(1, got["tasks"])
            per_s = acc / got["seconds"]
            print(
                f"{model:<22} {setting:<9} {got['correct']:>3}/{got['tasks']:<3} {acc:>5.2f} "
                f"{got['seconds']:>7.1f} {per_s:>7.3f}",
                flush=True,
            )
            if best is None or per_s > best[0]:
                best = (per_s, model, setting)
    if best is not None:
        print(f"best accuracy per second: {best[1]} with {best[2]}")


if __name__ == "__main__":
    main()
