"""What the harness's safe open (``omnilab._wsread``) costs per read, against a plain read.

Usage::

    python bench/safe_open.py [--reads 20000] [--depth 3] [--size 65536]

Reads one file ``--depth`` folders deep in a scratch workspace ``--reads`` times each way,
interleaved in rounds so a busy machine slows both alike: ``Path.read_bytes`` (what the harness
did before), ``_wsread.read_bytes`` of a path outside any workspace (the user's own inputs, the
media cache: ``O_NONBLOCK`` plus ``fstat``), of a path in a workspace marked untrusted (opened
beneath it with ``openat2``, or one ``O_NOFOLLOW`` open per component where the kernel lacks it,
forced with ``--no-openat2``), and a by-descriptor walk of a 1,000-file tree against ``os.walk``
with an ``lstat`` per file (the created-files snapshot before).
Prints the median per operation over the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from omnilab import _wsread, _wswalk


def _time(fn: Callable[[], object], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) / n


def _old_snapshot(root: Path) -> int:
    found = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            (Path(folder) / name).lstat()
            found += 1
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=20_000)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--size", type=int, default=64 * 1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-openat2", action="store_true")
    args = parser.parse_args()
    if args.no_openat2:
        _wsread._openat2_ok = False
    with tempfile.TemporaryDirectory(prefix="omnilab-safe-open-") as tmp:
        plain_root, marked_root = Path(tmp) / "plain", Path(tmp) / "ws"
        for root in (plain_root, marked_root):
            folder = root.joinpath(*[f"d{i}" for i in range(args.depth)])
            folder.mkdir(parents=True)
            (folder / "view.jpg").write_bytes(os.urandom(args.size))
            for i in range(1000):
                (root / f"d0/f{i}").write_bytes(b"x")
        _wsread.mark_untrusted(marked_root)
        rel = [f"d{i}" for i in range(args.depth)]
        plain = plain_root.joinpath(*rel, "view.jpg")
        marked = marked_root.joinpath(*rel, "view.jpg")
        n = max(1, args.reads // args.rounds)
        cases: dict[str, Callable[[], object]] = {
            "Path.read_bytes": plain.read_bytes,
            "_wsread.read_bytes, not a workspace": lambda: _wsread.read_bytes(plain),
            "_wsread.read_bytes, in a workspace": lambda: _wsread.read_bytes(marked),
            "os.walk + lstat, 1,000 files": lambda: _old_snapshot(plain_root),
            "_wswalk.walk, 1,000 files": lambda: list(_wswalk.walk(marked_root)),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, fn in cases.items():
                count = n if "walk" not in name else max(1, n // 200)
                times[name].append(_time(fn, count))
    how = "openat2" if _wsread._openat2_ok else "one O_NOFOLLOW open per component"
    print(f"{args.size} bytes, {args.depth} folders deep; beneath a workspace: {how}")
    base = statistics.median(times["Path.read_bytes"])
    for name, xs in times.items():
        median = statistics.median(xs)
        extra = f"  ({(median - base) * 1e6:+.1f} us)" if "read_bytes" in name else ""
        print(f"  {name:40} {median * 1e6:9.1f} us{extra}")


if __name__ == "__main__":
    main()
