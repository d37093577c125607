"""The floors of ``bench/media_eval.py`` (issue 37): what the ffmpeg command line spends getting
the same frames and soundtrack, what omnilab spends preparing them (fresh process, empty cache),
and the lower bound of any byte-identical preparation (the decoding walk, the LANCZOS shrink and
the soundtrack's decoding alone); and how a child process's cost is measured (:func:`run_child`:
wall, CPU of all threads, peak RSS, from ``wait4``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from omnilab.media import probe

FPS_SENT = 2.0
MAX_FRAMES = 128
MAX_EDGE = 512
FFMPEG_INPUTS = 16


@dataclass
class Proc:
    """What one child process cost."""

    wall_s: float
    cpu_s: float
    rss_mb: float
    out: str


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> Proc:
    """Run ``cmd`` and return its wall time, CPU (all threads) and peak RSS, from ``wait4``."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}):\n{text[-2000:]}")
    return Proc(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text)


_PREPARE = """
import resource, sys, time
from pathlib import Path
from omnilab.media import probe
from omnilab.media.audio import audio_segment
from omnilab.media.prepared import jpeg_frames
video, what = Path(sys.argv[1]), sys.argv[2]
info = probe(video)
n = max(1, min({frames}, round((info.duration or 0) * {fps})))
t0 = resource.getrusage(resource.RUSAGE_SELF)
if what == "frames":
    jpeg_frames(video, 0.0, None, num=n, max_edge={edge})
else:
    audio_segment(video, 0.0, info.duration)
t1 = resource.getrusage(resource.RUSAGE_SELF)
print((t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime))
"""


_BOUND = """
import resource, sys
import av
from omnilab.media import probe
from omnilab.media._picker import Picker
from omnilab.media.image import resize
from omnilab.media.video import _linspace
video = sys.argv[1]
info = probe(video)
n = max(1, min({frames}, round((info.duration or 0) * {fps})))
times = _linspace(0.0, info.duration or 0.0, n)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = cpu()
with av.open(video) as c:  # the frames' decoding walk alone: no conversion, one thread
    picker = Picker(c, info, keyframes_only=False, threads="NONE", seek_gap=info.keyframe_interval or 60.0)
    shown = [frame for _, (_, frame) in picker.pick(times)]
    image = shown[len(shown) // 2].to_image()
t1 = cpu()
for _ in range(n):  # the LANCZOS shrink the requests' bytes depend on, once per frame
    resize(image, {edge})
t2 = cpu()
with av.open(video) as c:  # the soundtrack's demuxing and decoding alone
    stream = c.streams.audio[0]
    for other in c.streams:
        if other.index != stream.index:
            other.discard = av.stream.Discard.all
    for frame in c.decode(stream):
        pass
t3 = cpu()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def lower_bound(video: Path) -> tuple[float, float, float]:
    """CPU seconds of the parts no byte-identical preparation can skip: decoding the pictures
    up to each exact frame (omnilab's walk, non-reference pictures skipped), shrinking each
    frame to ``MAX_EDGE`` with Pillow's LANCZOS (what the request bodies are made of), and
    decoding the soundtrack; in a fresh process, imports excluded."""
    code = _BOUND.format(frames=MAX_FRAMES, fps=FPS_SENT, edge=MAX_EDGE)
    walk, shrink, sound = run_child([sys.executable, "-c", code, str(video)]).out.split()[-3:]
    return float(walk), float(shrink), float(sound)


def ours(video: Path, what: str, folder: Path) -> float:
    """CPU seconds omnilab spends preparing ``what`` (frames or soundtrack), fresh process and
    empty cache, imports excluded."""
    code = _PREPARE.format(frames=MAX_FRAMES, fps=FPS_SENT, edge=MAX_EDGE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNILAB_")}
    env["OMNILAB_CACHE_DIR"] = str(folder / f"cache-{what}-{time.monotonic_ns()}")
    proc = run_child([sys.executable, "-c", code, str(video), what], env)
    return float(proc.out.strip().splitlines()[-1])


def ffmpeg_frames(video: Path, times: list[float], last: float, folder: Path) -> float:
    """CPU seconds of the ffmpeg CLI getting the frame at each time, scaled to ``MAX_EDGE``
    (lanczos) and written as JPEG: the cheaper of seeking to each time (one ``-ss T -i FILE``
    input per frame, ``FFMPEG_INPUTS`` inputs per process; what sparse frames cost) and one pass
    over the video selecting the frames by index (what dense frames cost)."""
    exe = floor_ffmpeg()
    scale = f"scale={MAX_EDGE}:-2:flags=lanczos"
    seeking = 0.0
    for lo in range(0, len(times), FFMPEG_INPUTS):
        batch = times[lo : lo + FFMPEG_INPUTS]
        cmd = [exe, "-v", "error", "-y"]
        for t in batch:
            cmd += ["-ss", f"{min(t, last):.3f}", "-i", str(video)]
        for i in range(len(batch)):
            out = folder / f"ff-{lo + i}.jpg"
            cmd += ["-map", f"{i}:v", "-frames:v", "1", "-vf", scale, "-q:v", "3", str(out)]
        seeking += run_child(cmd).cpu_s
    fps = probe(video).fps or 25.0
    picks = sorted({int(min(t, last) * fps + 1e-6) for t in times})
    select = _any_of([f"eq(n\\,{n})" for n in picks])
    cmd = [exe, "-v", "error", "-y", "-i", str(video), "-an", "-vf", f"select={select},{scale}"]
    cmd += ["-fps_mode", "passthrough", "-q:v", "3", str(folder / "pass-%04d.jpg")]
    one_pass = run_child(cmd).cpu_s
    print(f"ffmpeg frames: seeking {seeking:.2f} s, one pass {one_pass:.2f} s CPU", flush=True)
    return min(seeking, one_pass)


def _any_of(terms: list[str]) -> str:
    """``a+b+c+...`` as a balanced tree: ffmpeg's expression parser limits nesting depth."""
    if len(terms) == 1:
        return terms[0]
    mid = len(terms) // 2
    return f"({_any_of(terms[:mid])}+{_any_of(terms[mid:])})"


def floor_ffmpeg() -> str:
    """The fastest ffmpeg on the machine: the system's (``ffmpeg`` on PATH) where there is one,
    else imageio-ffmpeg's static binary (for the soundtrack it took 2.6-2.9x the CPU of Debian's
    ffmpeg 5.1 here; about the same for frames: docs/performance.md, issue 48). Says which."""
    exe = shutil.which("ffmpeg")
    if exe is None:
        import imageio_ffmpeg

        exe = imageio_ffmpeg.get_ffmpeg_exe()
    print(f"ffmpeg CLI floor: {exe}", flush=True)
    return exe


def ffmpeg_audio(video: Path, folder: Path) -> float:
    cmd = [floor_ffmpeg(), "-v", "error", "-y", "-i", str(video), "-vn"]
    cmd += ["-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(folder / "ff.wav")]
    return run_child(cmd).cpu_s


def last_frame(video: Path) -> float:
    """Time of the video track's last frame (ffmpeg writes nothing when seeking past it; the
    container may last longer, by its sound)."""
    import av

    with av.open(str(video)) as c:
        stream = c.streams.video[0]
        rate = float(stream.average_rate or 25)
        if stream.duration is not None and stream.time_base is not None:
            return float(stream.duration * stream.time_base) - 1.0 / rate
        return float(c.duration or 0) / av.time_base - 1.0 / rate


def uniform_times(duration: float) -> list[float]:
    from omnilab.media.video import _linspace

    n = max(1, min(MAX_FRAMES, round(duration * FPS_SENT)))
    return _linspace(0.0, duration, n)
