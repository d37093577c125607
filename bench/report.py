"""Time ``omnilab report`` on a large run, and the index page's load in a browser.

Usage::

    python bench/report.py [--tasks 1000] [--frames 2] [--repeat 3] [--browser /usr/bin/chromium]
    python bench/report.py --screenshots docs/images    # the pictures in docs/reports.md

A synthetic run (:func:`omnilab.report.synthetic.write_synthetic_run`: every task with its
trajectory, ``--frames`` frames of its own, an audio segment, a purge and a side call) is
written first (not timed); then the report is built ``--repeat`` times into fresh folders and
the best and median wall times printed (and the CPU time of the process, which a loaded
machine does not inflate), with the report's size and file count. With a Chromium,
the index page is opened ``--repeat`` times and the time to its ``load`` event printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from omnilab.report import build_report
from omnilab.report.synthetic import write_synthetic_run


def size_of(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def page_load(index: Path, browser: str, repeat: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=browser, args=["--no-sandbox"])
        for _ in range(repeat):
            page = chromium.new_page()
            start = time.perf_counter()
            page.goto(index.as_uri(), wait_until="load")
            times.append(time.perf_counter() - start)
            page.close()
        chromium.close()
    return times


def screenshots(folder: Path, browser: str) -> None:
    """The docs' pictures: the index and one task page of a 24-task synthetic run."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        run = write_synthetic_run(Path(tmp) / "run", tasks=24)
        index = build_report([run], Path(tmp) / "report")
        folder.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=browser, args=["--no-sandbox"])
            page = chromium.new_page(viewport={"width": 1200, "height": 1000})
            for url, name, scroll in (
                (index, "report-index.png", None),
                (index.parent / "tasks" / "task-0004.html", "report-task.png", ".msg.assistant"),
            ):
                page.goto(url.as_uri(), wait_until="load")
                if scroll is not None:  # the conversation, not the header
                    page.eval_on_selector(scroll, "e => e.scrollIntoView()")
                    page.wait_for_timeout(300)
                page.screenshot(path=str(folder / name))
                print(folder / name)
            chromium.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--frames", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--browser", default="/usr/bin/chromium")
    parser.add_argument(
        "--screenshots", type=Path, help="Only save the docs' screenshots into this folder."
    )
    args = parser.parse_args()
    if args.screenshots is not None:
        screenshots(args.screenshots, args.browser)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        run = write_synthetic_run(root / "run", tasks=args.tasks, frames=args.frames)
        print(f"wrote a {args.tasks}-task run in {time.perf_counter() - start:.1f} s (not timed)")
        times, cpu = [], []
        for n in range(args.repeat):
            out = root / f"report{n}"
            start, used = time.perf_counter(), time.process_time()
            index = build_report([run], out)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - used)
        size, count = size_of(root / "report0")
        index_kb = (root / "report0" / "index.html").stat().st_size / 1024
        print(
            f"report of {args.tasks} tasks: best {min(times):.2f} s, median "
            f"{statistics.median(times):.2f} s over {args.repeat} (CPU, all threads: best "
            f"{min(cpu):.2f} s); {count} files, "
            f"{size / 1e6:.1f} MB ({size / args.tasks / 1024:.0f} KB per task), "
            f"index.html {index_kb:.0f} KB"
        )
        if Path(args.browser).is_file():
            loads = page_load(index, args.browser, args.repeat)
            print(
                f"index page load: best {min(loads):.2f} s, median {statistics.median(loads):.2f} s"
            )
        else:
            print(f"no browser at {args.browser}: page load not measured")
        print(f"load average: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
