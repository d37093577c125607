"""Camera-like test footage for the media benchmarks: texture, motion, B-frames, stereo sound.

``bench/media.py``'s video (flat colour blocks, x264 ``ultrafast``: no B-frames, no CABAC, no
deblocking) decodes several times faster than real footage and has no pictures a decoder may
skip. Videos users evaluate on (web video, 720p H.264 High profile) have texture, motion, and
B-frames. This generator makes such a video: a detailed still scene panned along a slow
Lissajous path, light sensor noise, the frame index drawn like :func:`omnilab.media.synth.
index_pattern` (so exactness checks can read it back), encoded with x264 ``veryfast``
(3 B-frames with pyramid, CABAC, deblocking), 44.1 kHz stereo AAC.

    python bench/footage.py OUT.mp4 [--minutes 2] [--loops N]

``--loops N`` makes long footage quickly: the generated minutes repeated N times by stream copy
(30 minutes of this footage would take hours to encode on 2 cores). The decoder does the same
work as on footage that never repeats (every GOP is decoded on its own); the drawn index repeats,
so the container's ``comment`` says how many pictures one loop has (:func:`loop_frames`) and the
exactness check compares the index modulo that.
"""

from __future__ import annotations

import argparse
import math
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from numpy.typing import NDArray
from PIL import Image

from omnilab.media import synth

FPS = 25
SIZE = (1280, 720)
GOP_SECONDS = 5.0
SAMPLE_RATE = 44_100
# How far the camera wanders from the scene's centre, in pixels.
PAN = (160, 90)


def scene(width: int, height: int, seed: int = 7) -> NDArray[np.uint8]:
    """A detailed RGB still: smooth noise at four scales plus hard-edged shapes."""
    rng = np.random.default_rng(seed)
    out = np.zeros((height, width, 3), dtype=np.float32)
    for cells, weight in ((6, 90.0), (24, 50.0), (96, 30.0), (384, 15.0)):
        small = rng.uniform(-1.0, 1.0, (cells * height // width + 1, cells, 3)).astype(np.float32)
        layers = [
            np.asarray(
                Image.fromarray(small[:, :, c], mode="F").resize((width, height), Image.BICUBIC)
            )
            for c in range(3)
        ]
        out += weight * np.stack(layers, axis=2)
    for _ in range(60):
        x, y = int(rng.integers(0, width - 80)), int(rng.integers(0, height - 80))
        w, h = int(rng.integers(20, 160)), int(rng.integers(20, 160))
        out[y : y + h, x : x + w] += rng.uniform(-80, 80, 3).astype(np.float32)
    return np.clip(out + 128.0, 0, 255).astype(np.uint8)


def frame_at(still: NDArray[np.uint8], index: int, rng: np.random.Generator) -> NDArray[np.uint8]:
    width, height = SIZE
    t = index / FPS
    x = PAN[0] + round(PAN[0] * math.sin(2 * math.pi * t / 23.0))
    y = PAN[1] + round(PAN[1] * math.sin(2 * math.pi * t / 17.0))
    picture = still[y : y + height, x : x + width].copy()
    noise = rng.integers(-3, 4, (height // 2, width // 2, 1), dtype=np.int16)
    noisy = picture.astype(np.int16)
    noisy[::2, ::2] += noise
    picture = np.clip(noisy, 0, 255).astype(np.uint8)
    band = synth.index_pattern(index, width, height)[: height // 3]
    picture[: height // 3] = band
    return picture


def make_footage(path: Path, minutes: float) -> Path:
    width, height = SIZE
    still = scene(width + 2 * PAN[0] + 1, height + 2 * PAN[1] + 1)
    rng = np.random.default_rng(11)
    frames = round(minutes * 60 * FPS)
    with av.open(str(path), "w") as out:
        vs = out.add_stream("libx264", rate=FPS)
        assert isinstance(vs, av.video.stream.VideoStream)
        vs.width, vs.height, vs.pix_fmt = width, height, "yuv420p"
        vs.codec_context.gop_size = round(GOP_SECONDS * FPS)
        # scenecut off: keyframes exactly every GOP, as in bench/media.py's video.
        vs.codec_context.options = {"preset": "veryfast", "x264-params": "scenecut=0"}
        aus = out.add_stream("aac", rate=SAMPLE_RATE, layout="stereo")
        assert isinstance(aus, av.audio.stream.AudioStream)
        per_frame = SAMPLE_RATE // FPS
        for i in range(frames):
            picture = av.VideoFrame.from_ndarray(frame_at(still, i, rng), format="rgb24")
            picture.pts, picture.time_base = i, Fraction(1, FPS)
            for packet in vs.encode(picture):
                out.mux(packet)
            t = (i * per_frame + np.arange(per_frame)) / SAMPLE_RATE
            tone = 0.3 * np.sin(2 * np.pi * synth.tone_freq(int(t[0])) * t)
            hiss = rng.normal(0.0, 0.02, (2, per_frame))
            sound = av.AudioFrame.from_ndarray(
                (tone + hiss).astype(np.float32), format="fltp", layout="stereo"
            )
            sound.sample_rate, sound.pts = SAMPLE_RATE, i * per_frame
            sound.time_base = Fraction(1, SAMPLE_RATE)
            for packet in aus.encode(sound):
                out.mux(packet)
        for stream in (vs, aus):
            for packet in stream.encode(None):
                out.mux(packet)
    return path


LOOP_TAG = "omnilab footage loop frames="


def loop_frames(path: Path) -> int | None:
    """Pictures per loop of footage made with ``--loops`` (``None`` for footage that never repeats)."""
    with av.open(str(path)) as c:
        comment = str(c.metadata.get("comment", ""))
    return int(comment[len(LOOP_TAG) :]) if comment.startswith(LOOP_TAG) else None


def repeat(source: Path, out_path: Path, loops: int) -> Path:
    """``source`` played ``loops`` times in one file, by stream copy (no re-encoding).

    Each loop's timestamps are shifted by the source's duration. An audio packet that would not
    come after the previous one (AAC's last frame runs past the video's end) is dropped, so
    the soundtrack has a gap of at most one AAC frame per loop; the pictures are all kept.
    """
    with av.open(str(source)) as src:
        video = src.streams.video[0]
        assert video.time_base is not None and video.average_rate is not None
        frames = video.frames or sum(1 for p in src.demux(video=0) if p.size)
        duration = Fraction(frames) / Fraction(video.average_rate)
        with av.open(str(out_path), "w") as out:
            out.metadata["comment"] = f"{LOOP_TAG}{frames}"
            streams = {s.index: out.add_stream_from_template(s) for s in src.streams}
            last: dict[int, int] = {}
            for k in range(loops):
                src.seek(0)
                for packet in src.demux():
                    if packet.dts is None or packet.size == 0:
                        continue
                    tb = packet.time_base
                    shift = int(duration * k / tb)
                    pts = packet.pts if packet.pts is not None else packet.dts
                    dts, pts = packet.dts + shift, pts + shift
                    if dts <= last.get(packet.stream.index, -(1 << 62)):
                        continue
                    last[packet.stream.index] = dts
                    packet.dts, packet.pts = dts, pts
                    packet.stream = streams[packet.stream.index]
                    out.mux(packet)
    return out_path


def ensure_footage(data_dir: Path, minutes: float) -> Path:
    """The footage file, made once into ``data_dir``."""
    path = data_dir / f"footage-{minutes:g}min-720p25-gop5-bframes.mp4"
    if path.exists():
        return path
    data_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.partial{path.suffix}")
    print(
        f"generating {path} ({minutes:g} min of textured footage; this takes a while) ...",
        flush=True,
    )
    started = time.perf_counter()
    make_footage(partial, minutes)
    partial.replace(path)
    print(f"generated in {time.perf_counter() - started:.0f} s\n", flush=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument(
        "--loops", type=int, default=1, help="repeat the footage this many times (stream copy)"
    )
    args = parser.parse_args()
    if args.loops <= 1:
        make_footage(args.out, args.minutes)
        return
    once = args.out.with_name(f"{args.out.stem}.once{args.out.suffix}")
    make_footage(once, args.minutes)
    repeat(once, args.out, args.loops)
    once.unlink()


if __name__ == "__main__":
    main()
