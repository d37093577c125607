"""The repository stands alone: no test, benchmark, source file or doc reads a path beside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("tests", "bench", "src", "docs")
# A relative escape into a sibling folder, or a parents[N] hop past the repository root followed by
# a folder name. parents[N] is allowed only while it stays inside the repository.
ESCAPES = [
    re.compile(r"\.\./shared"),
    re.compile(r"""parents\[(\d+)\]\s*/\s*["']"""),
]


def _depth(path: Path) -> int:
    """How many parents[] hops from ``path`` reach the repository root."""
    return len(path.relative_to(ROOT).parts) - 1


def test_nothing_reads_outside_the_repository() -> None:
    offenders: list[str] = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".py", ".md", ".txt", ".toml", ".json", ".yaml", ".sh"}:
                continue
            if path == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for lineno, line in enumerate(text.splitlines(), 1):
                for pattern in ESCAPES:
                    for match in pattern.finditer(line):
                        hops = int(match.group(1)) if match.groups() else None
                        # parents[k] of a file at depth d is inside the repo while k <= d.
                        if hops is not None and hops <= _depth(path):
                            continue
                        offenders.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not offenders, "paths outside the repository:\n" + "\n".join(offenders)


def test_the_fixtures_are_in_the_repository() -> None:
    data = ROOT / "tests" / "data"
    for name in (
        "omnigaia_sample.json",
        "speech/two_cities_part1.wav",
        "speech/two_cities_part1.txt",
    ):
        assert (data / name).is_file(), name
    readme = (data / "README.md").read_text(encoding="utf-8")
    for name in ("omnigaia_sample.json", "two_cities_part1", "CC-BY-4.0", "MIT"):
        assert name in readme
