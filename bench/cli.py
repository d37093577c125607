"""CLI start-up benchmark: whole ``omnilab`` processes, as a user runs them.

- ``omnilab --version`` (target <= 0.3 s),
- ``omnilab media probe`` on a small file (target <= 0.5 s),
- ``omnilab media frames`` for 32 frames over the 30-minute 720p test video of
  ``bench/media.py``, against one ffmpeg process per frame (imageio-ffmpeg's binary) at the same
  times (target >= 2.5x faster).

Usage::

    python bench/cli.py [--minutes 30] [--data-dir DIR] [--repeat 5]

The long video is ``bench/media.py``'s (``ensure_video``) when it has been generated; otherwise a
one-minute video made by ``ensure_video`` is repeated, by stream copy, into a file of the same
length, codec, size, frame rate and keyframe interval: seconds instead of the quarter of an hour
that encoding 30 minutes takes on two cores (``--generate`` encodes the real one). Runs are
interleaved and each figure is the best of ``--repeat``; CPU seconds include the child processes,
and move less than wall-clock seconds when the machine is shared.
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# bench/media.py: the long test video and the ffmpeg baseline, reused as they are.
import media as media_bench
from omnilab.config import get_settings
from omnilab.media import probe, synth

MAX_VERSION_S = 0.3
MAX_PROBE_S = 0.5
MIN_FRAMES_SPEEDUP = 2.5


def omnilab_command() -> list[str]:
    """The installed ``omnilab`` script beside this Python, else ``python -m omnilab``."""
    script = Path(sys.executable).with_name("omnilab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "omnilab"]


def long_video(data_dir: Path, minutes: float, *, generate: bool) -> Path:
    """bench/media.py's test video if it exists (or ``generate``), else a repeated minute."""
    full = data_dir / f"synth-{minutes:g}min-720p25-gop5.mp4"
    if generate or full.exists() or minutes <= 1.0:
        return media_bench.ensure_video(data_dir, minutes)
    segment = media_bench.ensure_video(data_dir, 1.0)
    path = data_dir / f"synth-{minutes:g}min-720p25-gop5-repeated.mp4"
    if not path.exists():
        partial = path.with_name(f"{path.stem}.partial{path.suffix}")
        repeat_video(segment, partial, math.ceil(minutes))
        partial.replace(path)
    return path


def repeat_video(segment: Path, out: Path, copies: int) -> None:
    """``copies`` of ``segment`` back to back, packets copied with shifted timestamps."""
    with av.open(str(segment)) as template, av.open(str(out), "w", format="mp4") as dst:
        streams = {s.index: dst.add_stream_from_template(s) for s in template.streams}
        first: dict[int, int] = {}
        end: dict[int, int] = {}
        for packet in template.demux():
            if packet.dts is None:
                continue
            i = packet.stream.index
            first[i] = min(first.get(i, packet.dts), packet.dts)
            end[i] = max(end.get(i, packet.dts), packet.dts + (packet.duration or 0))
        span = {i: end[i] - first[i] for i in streams}
        for k in range(copies):
            # A fresh reader per copy: muxing takes the packets' data.
            with av.open(str(segment)) as src:
                for packet in src.demux():
                    if packet.dts is None:
                        continue
                    i = packet.stream.index
                    packet.dts += k * span[i]
                    if packet.pts is not None:
                        packet.pts += k * span[i]
                    packet.stream = streams[i]
                    dst.mux(packet)


def run_quiet(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")


def main() -> None:
    args = _parse_args()
    video = long_video(args.data_dir, args.minutes, generate=args.generate)
    info = probe(video)
    duration = info.duration or args.minutes * 60.0
    times = [float(t) for t in np.linspace(0.0, duration, media_bench.EXACT_FRAMES)]
    omnilab = omnilab_command()
    print(media_bench.machine())
    print(f"video: {info.summary()}, keyframe every {info.keyframe_interval} s")
    print(f"command: {' '.join(Path(c).name for c in omnilab)}\n")

    with tempfile.TemporaryDirectory(prefix="omnilab-bench-cli-") as tmp:
        small = synth.make_video(Path(tmp) / "small.mp4", duration=2.0, size=(320, 240))
        out = Path(tmp) / "frames"

        def frames_cli() -> None:
            shutil.rmtree(out, ignore_errors=True)
            n = str(media_bench.EXACT_FRAMES)
            run_quiet([*omnilab, "media", "frames", str(video), "-n", n, "-o", str(out)])
            written = len(list(out.glob("*.jpg")))
            if written != media_bench.EXACT_FRAMES:
                sys.exit(f"omnilab media frames wrote {written} frames")

        runs: dict[str, Callable[[], object]] = {
            "version": lambda: run_quiet([*omnilab, "--version"]),
            "probe": lambda: run_quiet([*omnilab, "media", "probe", str(small)]),
            "frames": frames_cli,
            "ffmpeg": lambda: media_bench.ffmpeg_per_frame(
                video, times, duration - 1.0 / media_bench.FPS
            ),
        }
        wall, cpu = media_bench.measure(runs, args.repeat, warm=set())

    speedup = wall["ffmpeg"] / wall["frames"]
    cpu_speedup = cpu["ffmpeg"] / cpu["frames"]
    rows = [
        ("omnilab --version", "version", "", "<= 0.3 s", wall["version"] <= MAX_VERSION_S),
        ("omnilab media probe (small file)", "probe", "", "<= 0.5 s", wall["probe"] <= MAX_PROBE_S),
        (
            "omnilab media frames, 32 frames",
            "frames",
            f"{speedup:.1f}x faster ({cpu_speedup:.1f}x CPU)",
            ">= 2.5x faster",
            speedup >= MIN_FRAMES_SPEEDUP,
        ),
        ("  ffmpeg process per frame, 32", "ffmpeg", "", "", None),
    ]
    print(f"{'measurement':34} {'wall s':>7} {'cpu s':>7}  {'figure':26} {'target':15} result")
    for label, key, figure, target, ok in rows:
        verdict = "" if ok is None else ("PASS" if ok else "MISS")
        print(f"{label:34} {wall[key]:7.3f} {cpu[key]:7.3f}  {figure:26} {target:15} {verdict}")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the test video")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=get_settings().cache_dir / "bench",
        help="where the generated video is kept (default: the omnilab cache folder)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (best kept)")
    parser.add_argument(
        "--generate",
        action="store_true",
        help="encode the full-length video instead of repeating a generated minute",
    )
    return parser.parse_args()


if __name__ == "__main__":
    main()
