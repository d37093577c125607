"""The README tour's offline commands are the ones ``bench/tour.py`` times, each with its
measured CPU and wall seconds written beside it (under 2 minutes of CPU on the embedded
default)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_timed_command_is_in_the_readme_with_its_time() -> None:
    tour: list[tuple[str, str]] = runpy.run_path(str(ROOT / "bench" / "tour.py"))["TOUR"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("## A tour") :].split("```")[1]  # the offline block
    lines = [line for line in block.splitlines() if line.startswith("omnilab ")]
    assert len(lines) == len(tour)
    for (_, command), line in zip(tour, lines, strict=True):
        assert line.startswith(command + " "), (command, line)
        measured = re.search(r"# .*\((\d+(?:\.\d+)?) s CPU, (\d+) s wall\)$", line)
        assert measured is not None, f"no measured time beside: {line}"
        assert float(measured.group(1)) < 120, line  # under 2 minutes on two idle cores
    assert "TIME_" not in readme and "TOUR_LOAD" not in readme
