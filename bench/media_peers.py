"""omnilab's media preparation against what users would pick instead, in fresh processes.

For N exact frames of one video (N = 32, 128, 512 by default; spread like qwen-vl-utils spreads
``nframes``: ``round(linspace(0, frames - 1, N))``), each shrunk to a longest edge of 512 px:

- ``omnilab``: :func:`omnilab.media.prepared.jpeg_frames_at` (cached JPEGs, empty cache);
- ``pyav-loop``: a plain PyAV loop as lmms-eval writes it (decode every picture up to the last
  wanted one, keep the wanted ones), Pillow LANCZOS + JPEG;
- ``decord``: ``VideoReader(path).get_batch(indices)``, Pillow LANCZOS + JPEG;
- ``qwen-vl-utils``: ``fetch_video({"video": path, "nframes": N, "max_pixels": 512 * 288})``
  (its default reader; the result is a tensor, no JPEG);
- ``ffmpeg-system`` (the ``ffmpeg`` on PATH, Debian's where installed) and ``ffmpeg-imageio``
  (imageio-ffmpeg's static binary): one pass selecting the frames by index
  (``select=eq(n,I)+...,scale=512:-2:flags=lanczos``, JPEG ``-q:v 3``).

and for the soundtrack (16 kHz mono PCM16 WAV): omnilab's ``audio_segment`` against
``ffmpeg -i FILE -vn -ac 1 -ar 16000`` with each binary.

Each row is a fresh process: CPU (user + sys, from ``wait4``; the Python peers report their own
at the end of the work, before the exactness dump), wall time, peak RSS, exactness (the frame
index drawn by ``bench/footage.py`` / :func:`omnilab.media.synth.index_pattern`, read back from
every delivered picture) and the ratio to omnilab. Rounds are interleaved; medians are printed.
decord, qwen-vl-utils and the PyAV loop run in venvs of their own under ``--venvs`` (made by
``--install``; a missing one is skipped with a message). Wall times on a shared machine are noisy:
compare CPU.

``--baseline SRC`` adds an ``omnilab-baseline`` row: the same omnilab call with ``SRC`` (the
``src`` folder of another checkout, e.g. ``git archive COMMIT src | tar -x -C DIR``) first on
``PYTHONPATH``, for before/after figures in the same interleaved rounds. The load average is
printed after every round (the machine's other work shows in wall times).

    python bench/media_peers.py [--video FILE | --minutes 3] [--counts 32,128,512] [--rounds 3]
        [--install] [--venvs DIR] [--peers omnilab,pyav-loop,decord,qwen,ffmpeg-system,...]
        [--baseline SRC]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from PIL import Image

from omnilab.media import probe, synth

sys.path.insert(0, str(Path(__file__).resolve().parent))
import media_floors
from footage import ensure_footage, loop_frames

MAX_EDGE = 512
RATE = 16_000
VENV_PEERS = {
    "pyav-loop": ["av", "pillow", "numpy"],
    "decord": ["decord", "pillow", "numpy"],
    # torch from its CPU index first: qwen-vl-utils imports torch and torchvision.
    "qwen": ["qwen-vl-utils==0.0.14", "decord", "torchvision", "pillow", "numpy"],
}
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
ALL_PEERS = ["omnilab", "pyav-loop", "decord", "qwen", "ffmpeg-system", "ffmpeg-imageio"]
# ``--baseline``'s source folder, set once by ``main``.
BASELINE_SRC: list[str] = []
# Pictures per loop of footage made with bench/footage.py --loops (set once in main).
LOOP: list[int] = []

_PRELUDE = """
import json, os, resource, sys, time
def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
video, out, wanted = sys.argv[1], sys.argv[2], [int(i) for i in sys.argv[3].split(",")]
"""
_SAVE = f"""
from PIL import Image
def save(k, image):
    image.thumbnail(({MAX_EDGE}, {MAX_EDGE}), Image.LANCZOS)
    image.save(f"{{out}}/{{k:04d}}.jpg", quality=90)
"""

CHILD = {
    "omnilab": _PRELUDE
    + """
from omnilab.media.prepared import jpeg_frames_at
from omnilab.media.probe import probe
fps = probe(video).fps
got = jpeg_frames_at(video, [(i + 0.5) / fps for i in wanted], max_edge=MAX_EDGE)
print(json.dumps({"cpu": _cpu(), "files": [str(f.path) for f in got]}))
""".replace("MAX_EDGE", str(MAX_EDGE)),
    "pyav-loop": _PRELUDE
    + _SAVE
    + """
import av
want, last, got = set(wanted), max(wanted), {}
with av.open(video) as c:
    for i, frame in enumerate(c.decode(video=0)):
        if i in want:
            got[i] = frame.to_image()
        if i >= last:
            break
for k, i in enumerate(wanted):
    save(k, got[i].copy())
print(json.dumps({"cpu": _cpu()}))
""",
    "decord": _PRELUDE
    + _SAVE
    + """
from decord import VideoReader
batch = VideoReader(video).get_batch(wanted).asnumpy()
for k, a in enumerate(batch):
    save(k, Image.fromarray(a))
print(json.dumps({"cpu": _cpu()}))
""",
    "qwen": _PRELUDE
    + """
from qwen_vl_utils import fetch_video
video_tensor = fetch_video({"video": video, "nframes": len(wanted), "max_pixels": MAX_PIXELS})
if isinstance(video_tensor, tuple):
    video_tensor = video_tensor[0]
cpu = _cpu()
import numpy as np
a = video_tensor.clamp(0, 255).round().byte().permute(0, 2, 3, 1).numpy()
np.save(f"{out}/frames.npy", a)
print(json.dumps({"cpu": cpu}))
""".replace("MAX_PIXELS", str(MAX_EDGE * 288)),
    "omnilab-audio": """
import json, resource, sys
from pathlib import Path
from omnilab.media.audio import audio_segment
audio_segment(sys.argv[1], out=Path(sys.argv[2]))
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": r.ru_utime + r.ru_stime}))
""",
}


@dataclass
class Run:
    cpu_s: float
    wall_s: float
    rss_mb: float
    exact: str = ""


@dataclass
class Row:
    peer: str
    task: str
    runs: list[Run] = field(default_factory=list)
    skipped: str = ""


# Each command runs under this small launcher: a child forked by the (large) benchmark process
# would report the benchmark's own resident set as its peak (Linux keeps it across exec).
_LAUNCH = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print(f"@@usage {ru.ru_utime + ru.ru_stime} {ru.ru_maxrss}", file=sys.stderr)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[Run, str]:
    """``cmd`` in a fresh process: its CPU (all threads), wall time and peak RSS."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, *cmd], stdout=out, stderr=subprocess.STDOUT, env=env
        )
        code = proc.wait()
        wall = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    if code != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} failed: {text[-1500:]}")
    usage = [line for line in text.splitlines() if line.startswith("@@usage ")][-1].split()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("@@usage "))
    return Run(float(usage[1]), wall, int(usage[2]) / 1024), body


def python_of(peer: str, venvs: Path) -> Path | None:
    if peer in ("omnilab", "omnilab-audio", "omnilab-baseline"):
        return Path(sys.executable)
    exe = venvs / peer / "bin" / "python"
    return exe if exe.exists() else None


def install(peer: str, venvs: Path) -> str:
    """Make ``peer``'s venv; '' when it works, else why not."""
    home = venvs / peer
    if (home / "bin" / "python").exists():
        return ""
    print(f"installing {peer} into {home} (this can take minutes) ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
        pip = [str(home / "bin" / "python"), "-m", "pip", "install", "-q"]
        if peer == "qwen":
            subprocess.run([*pip, "torch", "--index-url", TORCH_CPU_INDEX], check=True)
        subprocess.run([*pip, *VENV_PEERS[peer]], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        shutil.rmtree(home, ignore_errors=True)
        return f"install failed: {e}"
    return ""


def ffmpeg_binaries() -> dict[str, str]:
    found = {}
    system = shutil.which("ffmpeg")
    if system:
        found["ffmpeg-system"] = system
    try:
        import imageio_ffmpeg

        found["ffmpeg-imageio"] = imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        pass
    return found


def version(exe: str) -> str:
    head = subprocess.run([exe, "-version"], capture_output=True, text=True).stdout.split("\n")
    return head[0].split(" Copyright")[0] if head else "?"


def frames_once(
    peer: str, exe: str, video: Path, wanted: list[int], folder: Path, check: bool
) -> Run:
    """One fresh process getting ``wanted`` with ``peer``; exactness read back afterwards."""
    out = folder / f"{peer}-{time.monotonic_ns()}"
    out.mkdir()
    if peer.startswith("ffmpeg"):
        info = probe(video)
        scale = f"{MAX_EDGE}:-2" if (info.width or 0) >= (info.height or 0) else f"-2:{MAX_EDGE}"
        select = media_floors._any_of([f"eq(n\\,{i})" for i in sorted(set(wanted))])
        cmd = [exe, "-v", "error", "-y", "-i", str(video), "-an", "-vf"]
        cmd += [f"select={select},scale={scale}:flags=lanczos", "-fps_mode", "passthrough"]
        result, _ = run([*cmd, "-q:v", "3", str(out / "%04d.jpg")])
        files = sorted(out.glob("*.jpg"))
    else:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OMNILAB_")}
        env["OMNILAB_CACHE_DIR"] = str(out / "cache")
        if peer == "omnilab-baseline":
            env["PYTHONPATH"] = os.pathsep.join([BASELINE_SRC[0], env.get("PYTHONPATH", "")])
        code = CHILD["omnilab" if peer == "omnilab-baseline" else peer]
        ids = ",".join(map(str, wanted))
        result, text = run([exe, "-c", code, str(video), str(out), ids], env)
        report = json.loads(text.strip().splitlines()[-1])
        result.cpu_s = float(report["cpu"])
        files = [Path(p) for p in report.get("files", [])] or sorted(out.glob("*.jpg"))
    result.exact = _exactness(peer, out, files, wanted) if check else "not checked"
    shutil.rmtree(out, ignore_errors=True)
    return result


def _exactness(peer: str, out: Path, files: list[Path], wanted: list[int]) -> str:
    """How many delivered pictures show the index of the frame asked for."""
    if peer == "qwen":
        pictures = [Image.fromarray(a) for a in np.load(out / "frames.npy")]
    else:
        pictures = [Image.open(p) for p in files]
    got = [synth.read_index(p) for p in pictures]
    period = LOOP[0] if LOOP else None
    if period:  # footage made with --loops shows the index within its loop
        wanted = [w % period for w in wanted]
    return f"{sum(g == w for g, w in zip(got, wanted, strict=False))}/{len(wanted)}"


def audio_once(peer: str, exe: str, video: Path, folder: Path) -> Run:
    wav = folder / f"{peer}-{time.monotonic_ns()}.wav"
    if peer == "omnilab":
        env = {k: v for k, v in os.environ.items() if not k.startswith("OMNILAB_")}
        env["OMNILAB_CACHE_DIR"] = str(folder / "cache-audio")
        result, _ = run([exe, "-c", CHILD["omnilab-audio"], str(video), str(wav)], env)
    else:
        cmd = [exe, "-v", "error", "-y", "-i", str(video), "-vn", "-ac", "1", "-ar", str(RATE)]
        result, _ = run([*cmd, "-c:a", "pcm_s16le", str(wav)])
    result.exact = f"{(wav.stat().st_size - 44) // 2} samples"
    wav.unlink()
    return result


def wanted_indices(video: Path, count: int) -> list[int]:
    import av

    with av.open(str(video)) as c:
        total = c.streams.video[0].frames or sum(1 for _ in c.demux(video=0)) - 1
    return [int(i) for i in np.linspace(0, total - 1, count).round()]


def main() -> None:
    args = _parse_args()
    video: Path = args.video or ensure_footage(args.data_dir, args.minutes)
    counts = [int(c) for c in args.counts.split(",") if c]
    peers = [p for p in args.peers.split(",") if p]
    if args.baseline is not None:
        BASELINE_SRC.append(str(args.baseline.resolve()))
        peers.insert(peers.index("omnilab") + 1 if "omnilab" in peers else 0, "omnilab-baseline")
    binaries = ffmpeg_binaries()
    exes: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for peer in peers:
        if peer.startswith("ffmpeg"):
            if peer in binaries:
                exes[peer] = binaries[peer]
                print(f"{peer}: {binaries[peer]} ({version(binaries[peer])})")
            else:
                skipped[peer] = "not found"
            continue
        why = install(peer, args.venvs) if args.install and peer in VENV_PEERS else ""
        python = python_of(peer, args.venvs)
        if python is None or why:
            skipped[peer] = why or f"no venv at {args.venvs / peer} (run with --install)"
        else:
            exes[peer] = str(python)
    for peer, why in skipped.items():
        print(f"skipped {peer}: {why}")
    period = loop_frames(video)
    if period:
        LOOP.append(period)
    info = probe(video)
    print(f"video: {video} ({info.duration:.0f} s, {info.width}x{info.height}, {info.fps} fps)")
    rows: dict[tuple[str, str], Row] = {}
    with tempfile.TemporaryDirectory(prefix="media-peers-") as tmp:
        folder = Path(tmp)
        wanted = {n: wanted_indices(video, n) for n in counts}
        for r in range(args.rounds):
            for n in counts:
                for peer, exe in exes.items():
                    row = rows.setdefault((f"{n} frames", peer), Row(peer, f"{n} frames"))
                    _measure(
                        row,
                        partial(
                            frames_once, peer, exe, video, wanted[n], folder, not args.no_check
                        ),
                    )
            if not args.no_audio:
                for peer, exe in exes.items():
                    if peer == "omnilab" or peer.startswith("ffmpeg"):
                        row = rows.setdefault(("soundtrack", peer), Row(peer, "soundtrack"))
                        _measure(row, partial(audio_once, peer, exe, video, folder))
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            print(f"round {r + 1}/{args.rounds} done (load average {load})", flush=True)
    _table(list(rows.values()))


def _measure(row: Row, once: Callable[[], Run]) -> None:
    if row.skipped:
        return
    try:
        row.runs.append(once())
    except (RuntimeError, OSError, ValueError, KeyError) as e:
        row.skipped = str(e).splitlines()[-1][:120] if str(e) else type(e).__name__
        print(f"{row.peer} {row.task}: failed: {row.skipped}", flush=True)


def _table(rows: list[Row]) -> None:
    """Medians per row, and each row's CPU and wall against omnilab's on the same task."""
    med: dict[tuple[str, str], tuple[float, float]] = {}
    for row in rows:
        if row.runs:
            cpu = statistics.median(r.cpu_s for r in row.runs)
            wall = statistics.median(r.wall_s for r in row.runs)
            med[(row.task, row.peer)] = (cpu, wall)
    print(
        "\n| task | tool | CPU s (median) | wall s | peak RSS MB | exact | CPU / omnilab | runs |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        if not row.runs:
            print(f"| {row.task} | {row.peer} | skipped: {row.skipped} | | | | | |")
            continue
        cpu, wall = med[(row.task, row.peer)]
        rss = max(r.rss_mb for r in row.runs)
        base = med.get((row.task, "omnilab"))
        ratio = f"{cpu / base[0]:.2f}x (wall {wall / base[1]:.2f}x)" if base else "n/a"
        spread = ", ".join(f"{r.cpu_s:.2f}" for r in row.runs)
        print(
            f"| {row.task} | {row.peer} | {cpu:.2f} | {wall:.2f} | {rss:.0f} | "
            f"{row.runs[-1].exact} | {ratio} | {spread} |"
        )


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--video", type=Path, help="a video made by bench/footage.py")
    parser.add_argument("--minutes", type=float, default=3.0, help="footage to generate")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "omnilab")
    parser.add_argument("--counts", default="32,128,512")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", default=",".join(ALL_PEERS))
    parser.add_argument("--no-audio", action="store_true", help="skip the soundtrack rows")
    parser.add_argument(
        "--no-check", action="store_true", help="a video without bench/footage.py's index marks"
    )
    parser.add_argument("--install", action="store_true", help="make the peers' venvs")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout's src folder: an omnilab-baseline row"
    )
    parser.add_argument(
        "--venvs", type=Path, default=Path.home() / ".cache" / "omnilab-bench" / "peers"
    )
    return parser.parse_args()


if __name__ == "__main__":
    main()
