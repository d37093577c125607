"""The README tour's commands on the embedded default, timed one by one.

Usage::

    python bench/tour.py [--out DIR] [--only NAME,...]

Makes ``talk.mp4`` (21 s, 640x360, on-screen text, the repository's read-speech sample as its
sound) in a scratch folder, then runs each command of the README's tour that needs no served
model, as the README writes it, through the real CLI (``python -m omnilab``), with the default
model (``local:smollm2`` when nothing is configured). Prints a Markdown table: command, exit
status, wall seconds, CPU seconds (the command's process and its children: on a shared machine
the wall time mostly measures the other jobs, the CPU time does not), and the load average before
and after. The README writes these times next to its commands.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEECH = ROOT / "tests" / "data" / "speech" / "two_cities_part1.wav"

# (name, command): the README tour's commands that run on the embedded default, as written there.
TOUR: list[tuple[str, str]] = [
    ("demo", "omnilab demo"),
    ("probe", "omnilab media probe talk.mp4"),
    ("frames", "omnilab media frames talk.mp4 --start 10 --end 20 --num 5 --out frames/"),
    ("audio", "omnilab media audio talk.mp4 --start 10 --end 20 --out seg.wav"),
    ("sheet", "omnilab media sheet talk.mp4 --num 16 --out sheet.jpg"),
    ("cache", "omnilab cache show"),
    ("digest", "omnilab digest talk.mp4"),
    ("models", "omnilab models"),
    ("chat", 'omnilab chat --model local:smollm2 "Say hello"'),
    ("tools", "omnilab tools"),
    ("agents", "omnilab agents"),
    ("ask", 'omnilab ask talk.mp4 "What text appears on screen?" --max-turns 3'),
    ("trace", "omnilab trace omnilab-runs/<time>-<id>/trajectory.jsonl"),
    ("eval", "omnilab eval offline-suite --limit 4 --max-turns 3 --out runs/suite"),
    ("metrics", "omnilab metrics runs/suite"),
    ("leaderboard", "omnilab leaderboard runs/suite"),
    ("protocols", "omnilab protocols"),
    ("export", "omnilab export sft runs/suite --format trl --out data/sft.jsonl"),
]


def make_talk(folder: Path) -> Path:
    """A 21 s video with on-screen text and read speech as its sound."""
    import av

    from omnilab.media import synth

    silent = synth.make_video(
        folder / "picture.mp4", duration=21.0, size=(640, 360), audio=False, text="omnilab tour"
    )
    out = folder / "talk.mp4"
    with (
        av.open(str(silent)) as video,
        av.open(str(SPEECH)) as sound,
        av.open(str(out), "w") as dst,
    ):
        vs = dst.add_stream_from_template(video.streams.video[0])
        aus = dst.add_stream("aac", rate=16_000, layout="mono")
        for packet in video.demux(video.streams.video[0]):
            if packet.dts is not None:
                packet.stream = vs
                dst.mux(packet)
        for frame in sound.decode(audio=0):
            frame.pts = None
            for packet in aus.encode(frame):
                dst.mux(packet)
        for packet in aus.encode(None):
            dst.mux(packet)
    silent.unlink()
    return out


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _last_trajectory(folder: Path) -> str:
    runs = sorted((folder / "omnilab-runs").glob("*/trajectory.jsonl"))
    return str(runs[-1].relative_to(folder)) if runs else "missing"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="Scratch folder (default: temp).")
    parser.add_argument("--only", default="", help="Comma-separated command names to run.")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="omnilab-tour-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMNILAB_CACHE_DIR": str(folder / "cache")}
    make_talk(folder)
    wanted = {n for n in args.only.split(",") if n}
    print(f"scratch folder {folder}; {os.cpu_count()} CPUs\n")
    print("| command | exit | wall (s) | CPU (s) | load before | load after |")
    print("|---|---|---|---|---|---|")
    for name, command in TOUR:
        if wanted and name not in wanted:
            continue
        argv = shlex.split(command)[1:]  # after "omnilab"
        argv = [_last_trajectory(folder) if "<time>" in a else a for a in argv]
        before = _load()
        used = _children_cpu()
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "omnilab", *argv],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        cpu = _children_cpu() - used
        print(
            f"| `{command}` | {proc.returncode} | {wall:.1f} | {cpu:.1f} | {before} | {_load()} |"
        )
        if proc.returncode not in (0, 3):
            print(f"<!-- {name} stderr: {proc.stderr.strip()[-300:]} -->")
    if args.out is None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
