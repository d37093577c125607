"""The soundtrack before and after a change, against the system ffmpeg (issue 48).

Each round runs, in fresh processes and in this order: the ``ffmpeg`` on PATH (``-vn -ac 1 -ar
16000``, the same WAV's samples), omnilab at ``--before`` (a git revision, its ``src`` unpacked
into a temporary folder) and omnilab from this checkout, each doing ``audio_segment(VIDEO,
out=...)`` for the whole file. CPU is user + system time of the child (``wait4``: interpreter
start and imports included). Printed: the median CPU of each, the median of the per-round
ratios to ffmpeg with their range, the 1-minute load average before and after the series, and
whether the two omnilab WAVs are byte-identical. Machine noise is large on a shared machine:
compare medians of many rounds, and quote the load average beside them.

    python bench/soundtrack_ab.py --video FILE [--before REV] [--rounds 9]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from media_floors import run_child

ROOT = Path(__file__).resolve().parents[1]
RATE = 16_000
_EXTRACT = (
    "import sys\nfrom pathlib import Path\nfrom omnilab.media.audio import audio_segment\n"
    "audio_segment(sys.argv[1], out=Path(sys.argv[2]))\n"
)


def unpack_src(rev: str, into: Path) -> Path:
    """``src`` of ``rev`` of this repository, unpacked under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "src.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def omnilab_cmd(src: Path, video: Path, out: Path) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return [sys.executable, "-c", _EXTRACT, str(video), str(out)], env


def ratios(cpu: list[float], base: list[float]) -> str:
    r = [a / b for a, b in zip(cpu, base, strict=True)]
    return f"{statistics.median(r):.3f}x (rounds {min(r):.2f}-{max(r):.2f}x)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--video", type=Path, required=True, help="a video or audio file")
    parser.add_argument("--before", default="HEAD~1", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise SystemExit("no ffmpeg on PATH: install one (e.g. apt-get install ffmpeg)")
    if not args.video.is_file():
        raise SystemExit(f"no such file: {args.video}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        before_src = unpack_src(args.before, folder / "before")
        wav = {name: folder / f"{name}.wav" for name in ("ffmpeg", "before", "after")}
        cli = [ffmpeg, "-nostdin", "-v", "error", "-y", "-i", str(args.video), "-vn", "-ac", "1"]
        cmds = {
            "ffmpeg": ([*cli, "-ar", str(RATE), str(wav["ffmpeg"])], None),
            "before": omnilab_cmd(before_src, args.video, wav["before"]),
            "after": omnilab_cmd(ROOT / "src", args.video, wav["after"]),
        }
        cpu: dict[str, list[float]] = {name: [] for name in cmds}
        load = [os.getloadavg()[0]]
        for n in range(args.rounds):
            for name, (cmd, env) in cmds.items():
                cpu[name].append(run_child(cmd, env).cpu_s)
            load.append(os.getloadavg()[0])
            print(
                f"round {n + 1}/{args.rounds}: "
                + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in cpu.items()),
                flush=True,
            )
        same = filecmp.cmp(wav["before"], wav["after"], shallow=False)
    print(
        f"\n{args.video.name}, {args.rounds} interleaved rounds, 1-min load average "
        f"{min(load):.1f}-{max(load):.1f}, before = {args.before}"
    )
    for name, values in cpu.items():
        line = f"{name:7s} CPU median {statistics.median(values):.3f} s ({min(values):.2f}-{max(values):.2f})"
        if name != "ffmpeg":
            line += f", / ffmpeg {ratios(values, cpu['ffmpeg'])}"
        print(line)
    print("before and after WAVs byte-identical:", "yes" if same else "NO")


if __name__ == "__main__":
    main()
