"""Media benchmark on a long synthetic video: exact frames, keyframe scans, audio and clips.

Exact frames are compared with the usual way of getting them (one ``ffmpeg -ss T -i FILE``
process per frame) and with the decode floor (PyAV seeking to the keyframe before each time and
decoding half a GOP, no RGB conversion): the cost that any exact method has to pay.

Usage::

    python bench/media.py [--minutes 30] [--data-dir DIR] [--repeat 3]

The test video (1280x720, 25 fps, H.264 with a 5 s GOP, AAC audio) is generated once into
``--data-dir`` and reused; on two cores a 30-minute file takes about 15 minutes to write.
Each measurement is the best of ``--repeat`` interleaved runs; probe's cache is cleared before each
run (a first call on a file) except for the row that says the file was already probed.
"""

from __future__ import annotations

import argparse
import importlib
import math
import multiprocessing
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from omnilab.config import get_settings
from omnilab.media import MediaError, frames, probe, synth
from omnilab.media.probe import _probe_cached

EXACT_FRAMES = 32
SCAN_FRAMES = 64
FPS = 25
GOP_SECONDS = 5.0
SIZE = (1280, 720)
AUDIO_SECONDS = 60.0
CLIP_SECONDS = 10.0

# Targets (see docs/performance.md).
MAX_FLOOR_RATIO = 1.3
MIN_SUBPROCESS_SPEEDUP = 2.5
MIN_SCAN_SPEEDUP = 10.0
MAX_RSS_MB = 400.0


def main() -> None:
    args = _parse_args()
    video = ensure_video(args.data_dir, args.minutes)
    info = probe(video)
    duration = info.duration or args.minutes * 60.0
    times = [float(t) for t in np.linspace(0.0, duration, EXACT_FRAMES)]
    print(machine())
    print(f"video: {info.summary()}, keyframe every {info.keyframe_interval} s, {_mb(video)}")
    print(verify_exact(video, times, duration), end="\n\n")

    runs: dict[str, Callable[[], object]] = {
        "exact": lambda: frames(video, 0.0, None, EXACT_FRAMES),
        "exact_warm": lambda: frames(video, 0.0, None, EXACT_FRAMES),
        "scan": lambda: frames(video, 0.0, None, SCAN_FRAMES, keyframes_only=True),
        "scan_warm": lambda: frames(video, 0.0, None, SCAN_FRAMES, keyframes_only=True),
        "floor": lambda: decode_floor(video, times),
        "subprocess": lambda: ffmpeg_per_frame(video, times, duration - 1.0 / FPS),
    }
    wall, cpu = measure(runs, args.repeat, warm={"exact_warm", "scan_warm"})
    extra = media_ops(video, duration, args.repeat)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    exact, floor, sub, scan = wall["exact"], wall["floor"], wall["subprocess"], wall["scan"]
    # Per frame: the scan returns twice as many frames as the exact call it is compared with.
    scan_speedup = (exact / EXACT_FRAMES) / (scan / SCAN_FRAMES)
    warm_speedup = (wall["exact_warm"] / EXACT_FRAMES) / (wall["scan_warm"] / SCAN_FRAMES)
    rows: list[Row] = [
        Row(
            "exact frames, 32 (frames)",
            "exact",
            f"{exact / floor:.2f}x floor",
            "<= 1.3x floor",
            exact / floor <= MAX_FLOOR_RATIO,
        ),
        Row(
            "  same, file already probed", "exact_warm", f"{wall['exact_warm'] / floor:.2f}x floor"
        ),
        Row("  decode floor, 32 x half GOP", "floor"),
        Row(
            "  ffmpeg process per frame, 32",
            "subprocess",
            f"{sub / exact:.1f}x faster",
            ">= 2.5x faster",
            sub / exact >= MIN_SUBPROCESS_SPEEDUP,
        ),
        Row(
            "keyframe scan, 64 (keyframes_only)",
            "scan",
            f"{scan_speedup:.1f}x faster/frame",
            ">= 10x faster",
            scan_speedup >= MIN_SCAN_SPEEDUP,
        ),
        Row("  same, file already probed", "scan_warm", f"{warm_speedup:.1f}x faster/frame"),
        *extra,
        Row("peak memory (ru_maxrss)", "", f"{peak_mb:.0f} MB", "< 400 MB", peak_mb < MAX_RSS_MB),
    ]
    wall.update({r.label: r.seconds for r in extra if r.seconds is not None})
    print(
        f"{'measurement':36} {'seconds':>8} {'cpu s':>7} {'ms/frame':>9}  {'figure':19} "
        f"{'target':15} result"
    )
    for row in rows:
        n = SCAN_FRAMES if row.key.startswith("scan") else EXACT_FRAMES if row.key in cpu else 0
        secs = f"{wall[row.key]:8.3f}" if row.key in wall else " " * 8
        cpus = f"{cpu[row.key]:7.3f}" if row.key in cpu else " " * 7
        per = f"{1000 * wall[row.key] / n:9.1f}" if n else " " * 9
        verdict = "" if row.ok is None else ("PASS" if row.ok else "MISS")
        print(f"{row.label:36} {secs} {cpus} {per}  {row.figure:19} {row.target:15} {verdict}")


@dataclass(frozen=True)
class Row:
    """One line of the table: ``key`` names the measurement whose seconds it shows."""

    label: str
    key: str
    figure: str = ""
    target: str = ""
    ok: bool | None = None
    seconds: float | None = None


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the test video")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=get_settings().cache_dir / "bench",
        help="where the generated video is kept (default: the omnilab cache folder)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    return parser.parse_args()


def ensure_video(data_dir: Path, minutes: float) -> Path:
    """The test video, generated on first use (in a child process, so its memory is not ours)."""
    path = data_dir / f"synth-{minutes:g}min-720p25-gop5.mp4"
    if path.exists():
        return path
    data_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.partial{path.suffix}")
    print(f"generating {path} ({minutes:g} min; this takes a while) ...", flush=True)
    started = time.perf_counter()
    child = multiprocessing.get_context("spawn").Process(target=_generate, args=(partial, minutes))
    child.start()
    child.join()
    if child.exitcode != 0:
        sys.exit(f"generating the test video failed (exit code {child.exitcode})")
    # Renamed only when complete, so an interrupted run is never mistaken for the real file.
    partial.replace(path)
    print(f"generated in {time.perf_counter() - started:.0f} s\n", flush=True)
    return path


def _generate(path: Path, minutes: float) -> None:
    synth.make_video(
        path,
        duration=minutes * 60.0,
        fps=FPS,
        size=SIZE,
        gop_seconds=GOP_SECONDS,
        preset="ultrafast",
    )


def measure(
    runs: dict[str, Callable[[], object]], repeat: int, *, warm: set[str]
) -> tuple[dict[str, float], dict[str, float]]:
    """Best wall-clock and best CPU seconds (all threads and child processes) of each run.

    Runs are interleaved so that load from other jobs on the machine hits every method alike;
    CPU time moves less with that load than wall-clock time does.
    """
    walls: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            if name not in warm:
                _probe_cached.cache_clear()  # pays for its own probe, as a first call does
            cpu_before = _cpu_seconds()
            started = time.perf_counter()
            run()
            walls[name].append(time.perf_counter() - started)
            cpus[name].append(_cpu_seconds() - cpu_before)
    return (
        {name: min(ts) for name, ts in walls.items()},
        {name: min(ts) for name, ts in cpus.items()},
    )


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def verify_exact(video: Path, times: list[float], duration: float) -> str:
    """Check that the timed call returns the right frames: each shows the index displayed at t."""
    last = round(duration * FPS) - 1
    got = [synth.read_index(f.image) for f in frames(video, 0.0, None, EXACT_FRAMES)]
    want = [min(last, math.floor(t * FPS + 1e-6)) for t in times]
    right = sum(g == w for g, w in zip(got, want, strict=True))
    if right != len(want):
        sys.exit(f"exact frames are wrong: {right}/{len(want)} right ({got} != {want})")
    return f"exact frames verified: {right}/{len(want)} show the frame displayed at t"


def decode_floor(video: Path, times: list[float]) -> None:
    """Seek to the keyframe before each time and decode half a GOP: no RGB, no bookkeeping."""
    half_gop = round(GOP_SECONDS * FPS / 2)
    with av.open(str(video)) as container:
        vs = container.streams.video[0]
        vs.thread_type = "AUTO"
        assert vs.time_base is not None
        for t in times:
            container.seek(int(t / vs.time_base), stream=vs, backward=True, any_frame=False)
            for n, _frame in enumerate(container.decode(vs)):
                if n + 1 >= half_gop:
                    break


def ffmpeg_per_frame(video: Path, times: list[float], last_frame: float) -> None:
    """The reference: one ffmpeg process per frame, fast input seeking (``-ss`` before ``-i``).

    ffmpeg writes nothing for a time at the very end, so times are capped at the last frame.
    """
    import imageio_ffmpeg

    exe = imageio_ffmpeg.get_ffmpeg_exe()
    with tempfile.TemporaryDirectory(prefix="omnilab-bench-") as tmp:
        for i, t in enumerate(times):
            out = Path(tmp) / f"{i}.png"
            cmd = [exe, "-v", "error", "-ss", f"{min(t, last_frame):.3f}", "-i", str(video)]
            subprocess.run([*cmd, "-frames:v", "1", "-y", str(out)], check=True)


def media_ops(video: Path, duration: float, repeat: int) -> list[Row]:
    """Audio segment and clip timings; these modules are written separately and may be absent."""
    rows: list[Row] = []
    ops = [
        (
            "audio_segment 60 s (middle)",
            "omnilab.media.audio",
            "audio_segment",
            AUDIO_SECONDS,
            ".wav",
        ),
        ("clip 10 s (middle)", "omnilab.media.clips", "clip", CLIP_SECONDS, ".mp4"),
    ]
    for label, module, name, seconds, suffix in ops:
        try:
            op = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            rows.append(Row(label, "", "not available yet"))
            continue
        spent: list[float] = []
        with tempfile.TemporaryDirectory(prefix="omnilab-bench-") as tmp:
            try:
                for i in range(repeat):
                    # A new output each run, so a cache hit cannot stand in for the work.
                    out = Path(tmp) / f"out{i}{suffix}"
                    # Centred on the middle, shifted a second per run so no run repeats another.
                    start = max(0.0, min(duration - seconds - repeat, (duration - seconds) / 2)) + i
                    started = time.perf_counter()
                    op(video, start, min(duration, start + seconds), out=out)
                    spent.append(time.perf_counter() - started)
            except (MediaError, TypeError, OSError) as e:
                rows.append(Row(label, "", f"failed: {e}"[:40]))
                continue
        median = f"median {statistics.median(spent):.3f} s"
        rows.append(Row(label, label, median, seconds=min(spent)))
    return rows


def machine() -> str:
    """One line describing where the figures were taken (load matters on a shared machine)."""
    cpu = platform.processor() or platform.machine()
    try:
        with Path("/proc/cpuinfo").open() as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    ffmpeg = av.library_versions.get("libavcodec", ())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"machine: {cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}; Python {platform.python_version()}, PyAV {av.__version__} "
        f"(libavcodec {'.'.join(map(str, ffmpeg))}); load average {load}"
    )


def _mb(path: Path) -> str:
    return f"{path.stat().st_size / 1024**2:.0f} MB"


if __name__ == "__main__":
    main()
