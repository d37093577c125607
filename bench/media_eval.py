"""Media-heavy evaluation benchmark (issue 37): ``omnilab eval`` with the ``omnigaia-paper``
delivery over long generated videos, cold and warm, against the ffmpeg command line's floor.

Usage::

    python bench/media_eval.py [--minutes 30] [--tasks 16] [--videos 16] [--concurrency 8]
                               [--rss-concurrency 64] [--data-dir DIR] [--out DIR]

What it does:

1. Generates (once, into ``--data-dir``) a ``--minutes`` 1280x720 25 fps H.264 video with a 5 s
   GOP and AAC sound (``--footage flat``: ``bench/media.py``'s colour blocks, no B-frames;
   ``--footage textured``: ``bench/footage.py``'s panned textured scene with B-frames and
   stereo sound, which decodes like web video; by default a ``--piece-minutes`` piece of it
   repeated by remuxing, which decodes like one long encode and takes seconds instead of a
   quarter of an hour to make on two cores), and ``--videos`` distinct files from it
   (remuxed with another title: other content identity, same decoding work), so no task
   reuses another's prepared media unless ``--videos`` is below ``--tasks``.
2. Writes ``--tasks`` OmniGAIA-format tasks, task i on video ``i % videos``, and runs
   ``omnilab eval omnigaia --protocol omnigaia-paper`` as a user would (a fresh process, a fresh
   media cache, no reply cache) with an image+audio model (``gemini-2.0-flash`` families: no
   video input, so each video goes as frames at 2 fps, at most 128 of at most 512 px, plus its
   soundtrack) against a local OpenAI-compatible server that answers at once and counts the
   bytes it receives (without keeping them).
3. Runs the same tasks again into a new run folder with the same media cache (warm).
4. Runs the same number of text-only tasks (one call each) for the cost that is not media
   (process start-up, the runner, the model calls): a run's **media CPU** is its CPU minus that.
5. Optionally (``--rss-concurrency N``, 0 to skip) a cold run at concurrency N, for its peak RSS.
6. The floors (``bench/media_floors.py``), on one of the videos: the ffmpeg CLI
   (the system's ``ffmpeg`` where there is one, else imageio-ffmpeg's binary) decoding the same frames (one ``-ss T -i FILE`` input per frame, 16
   inputs per process, scaled to 512 px with lanczos and written as JPEG) and extracting the soundtrack to 16 kHz mono WAV; against
   omnilab preparing the same (``jpeg_frames`` and ``audio_segment`` into an empty cache), each
   in a fresh process, CPU of all threads; and the **lower bound** of any byte-identical
   preparation: the decoding walk to the exact frames alone, Pillow's LANCZOS shrink of that
   many frames, and the soundtrack's decoding alone.

Every figure is CPU seconds (user + system, all threads, from ``wait4``) unless it says wall;
peak RSS is the eval process's ``ru_maxrss``. The machine is shared: CPU figures move less
than wall figures under load, but both move.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omnilab.media import probe

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the floors module beside this one
from media_floors import (
    Proc,
    ffmpeg_audio,
    ffmpeg_frames,
    last_frame,
    lower_bound,
    ours,
    run_child,
    uniform_times,
)

# The omnilab source the eval processes run (``--eval-pythonpath``: before/after comparisons).
EVAL_PYTHONPATH = ""

# Targets (issue 37; see docs/performance.md).
MAX_CPU_PER_TASK = 5.0
MAX_FRAMES_RATIO = 1.5
MAX_AUDIO_RATIO = 1.2
MAX_WARM_SHARE = 0.10
MAX_RSS_MB = 3000.0


def looped(piece: Path, minutes: float) -> Path:
    """A ``minutes`` video that repeats ``piece`` (remuxed with shifted timestamps, not
    re-encoded), made once next to it: the same decoding work as one long encode with the same
    settings (same GOP, same frame types), in seconds instead of a quarter of an hour."""
    import av

    path = piece.with_name(f"{piece.stem}-looped-{minutes:g}min{piece.suffix}")
    if path.exists():
        return path
    partial = path.with_name(f"{path.stem}.partial{path.suffix}")
    with av.open(str(piece)) as src:
        spans = {}
        for packet in src.demux():
            if packet.pts is None:
                continue
            lo, hi = spans.get(packet.stream.index, (packet.pts, packet.pts))
            end = packet.pts + (packet.duration or 0)
            spans[packet.stream.index] = (min(lo, packet.pts), max(hi, end))
        piece_s = float(src.duration or 0) / av.time_base
    repeats = max(1, round(minutes * 60 / piece_s))
    with av.open(str(partial), "w") as dst, av.open(str(piece)) as src:
        streams = {s.index: dst.add_stream_from_template(s) for s in src.streams}
        for k in range(repeats):
            src.seek(0)
            for packet in src.demux():
                if packet.dts is None:
                    continue
                lo, hi = spans[packet.stream.index]
                shift = k * (hi - lo)
                packet.pts = None if packet.pts is None else packet.pts + shift
                packet.dts += shift
                packet.stream = streams[packet.stream.index]
                dst.mux(packet)
    partial.replace(path)
    return path


def variants(base: Path, count: int) -> list[Path]:
    """``count`` files with the content of ``base`` but each its own identity (a remux with
    another title), made once next to it."""
    import av

    made = []
    for i in range(count):
        path = base.with_name(f"{base.stem}-v{i}{base.suffix}")
        if not path.exists():
            partial = path.with_name(f"{path.stem}.partial{path.suffix}")
            with av.open(str(base)) as src, av.open(str(partial), "w") as dst:
                dst.metadata["title"] = f"omnilab media_eval variant {i}"
                streams = {s.index: dst.add_stream_from_template(s) for s in src.streams}
                for packet in src.demux():
                    if packet.dts is None:
                        continue
                    packet.stream = streams[packet.stream.index]
                    dst.mux(packet)
            partial.replace(path)
        made.append(path)
    return made


def write_tasks(folder: Path, videos: list[Path], tasks: int) -> Path:
    items = [
        {
            "id": f"m{i:03d}",
            "question": f"What happens in the video (task {i})?",
            "answer": "a",
            "Level": "Easy",
            "category": "Video",
            "omni_modal_input": [
                {"type": "video", "id": "video_1", "path": str(videos[i % len(videos)])}
            ],
        }
        for i in range(tasks)
    ]
    path = folder / "tasks.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def text_tasks(folder: Path, tasks: int) -> Path:
    path = folder / "text.jsonl"
    lines = [
        json.dumps({"id": f"q{i}", "question": f"Question {i}?", "answer": "a"})
        for i in range(tasks)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def eval_run(args: list[str], base_url: str, out: Path, cache: Path, concurrency: int) -> Proc:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMNILAB_")}
    env["OMNILAB_CACHE_DIR"] = str(cache)
    if EVAL_PYTHONPATH:
        env["PYTHONPATH"] = EVAL_PYTHONPATH
    cmd = [sys.executable, "-m", "omnilab", "eval", *args]
    cmd += ["--model", f"vllm:gemini-2.0-flash@{base_url}", "--scorer", "answer_set"]
    cmd += ["--concurrency", str(concurrency), "--out", str(out), "--no-progress", "--no-cache"]
    proc = run_child(cmd, env)
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    failed = [r for r in results if r.get("error") or r.get("status") not in (None, "answered")]
    if failed:
        raise SystemExit(f"{len(failed)} task(s) failed, e.g. {json.dumps(failed[0])[:600]}")
    return proc


def main() -> None:
    args = _parse_args()
    if args.out is not None:
        Path(args.out).mkdir(parents=True, exist_ok=True)
    global EVAL_PYTHONPATH
    EVAL_PYTHONPATH = args.eval_pythonpath
    if args.footage == "textured":
        ensure = importlib.import_module("footage").ensure_footage
    else:
        ensure = importlib.import_module("media").ensure_video
    if args.piece_minutes and args.piece_minutes < args.minutes:
        base = looped(ensure(args.data_dir, args.piece_minutes), args.minutes)
    else:
        base = ensure(args.data_dir, args.minutes)
    videos = variants(base, args.videos)
    info = probe(videos[0])
    print(
        f"videos: {len(videos)} x {info.duration:.0f} s {info.width}x{info.height} "
        f"({base.stat().st_size / 1e6:.0f} MB each); tasks: {args.tasks}; "
        f"concurrency {args.concurrency}; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    # The floors first: each in its own fresh process, before the runs heat anything up.
    with tempfile.TemporaryDirectory(dir=args.out, prefix="media-floor-") as tmp:
        folder = Path(tmp)
        frames_ours = ours(videos[0], "frames", folder)
        audio_ours = ours(videos[0], "audio", folder)
        frames_floor = ffmpeg_frames(
            videos[0], uniform_times(info.duration or 0.0), last_frame(videos[0]), folder
        )
        audio_floor = ffmpeg_audio(videos[0], folder)
        walk, shrink, sound = lower_bound(videos[0])
    floor_rows = [
        (
            "frames, one video: omnilab / ffmpeg CLI",
            f"{frames_ours:.2f} / {frames_floor:.2f} s = {frames_ours / frames_floor:.2f}x",
            f"<= {MAX_FRAMES_RATIO}x",
            frames_ours <= MAX_FRAMES_RATIO * frames_floor,
        ),
        (
            "soundtrack, one video: omnilab / ffmpeg CLI",
            f"{audio_ours:.2f} / {audio_floor:.2f} s = {audio_ours / audio_floor:.2f}x",
            f"<= {MAX_AUDIO_RATIO}x",
            audio_ours <= MAX_AUDIO_RATIO * audio_floor,
        ),
    ]
    floor_rows.append(
        (
            "lower bound per task: decoding walk + LANCZOS shrink + soundtrack decoding",
            f"{walk:.2f} + {shrink:.2f} + {sound:.2f} = {walk + shrink + sound:.2f} s",
            "",
            None,
        )
    )
    if args.floors_only:
        _table(floor_rows)
        return
    from omnilab.models.fake_server import FakeOpenAIServer, reply_text

    report: dict[str, Any] = {"minutes": args.minutes, "tasks": args.tasks, "videos": args.videos}
    with (
        tempfile.TemporaryDirectory(dir=args.out, prefix="media-eval-") as tmp,
        FakeOpenAIServer(keep_bodies=False, default=reply_text("<answer>a</answer>")) as server,
    ):
        folder = Path(tmp)
        data = write_tasks(folder, videos, args.tasks)
        cache = folder / "cache"
        common = ["omnigaia", "--data", str(data), "--protocol", "omnigaia-paper"]
        runs: dict[str, Proc] = {}
        sent: dict[str, int] = {}
        for name, out, concurrency in [
            ("cold", folder / "run1", args.concurrency),
            ("warm", folder / "run2", args.concurrency),
        ]:
            before = len(server.chat_requests)
            runs[name] = eval_run(common, server.base_url, out, cache, concurrency)
            sent[name] = sum(r.size for r in server.chat_requests[before:])
            print(f"{name}: {_fmt(runs[name])}, {sent[name] / 1e6:.0f} MB sent", flush=True)
        text = text_tasks(folder, args.tasks)
        runs["text"] = eval_run(
            ["jsonl", "--data", str(text)],
            server.base_url,
            folder / "run-text",
            folder / "cache-text",
            args.concurrency,
        )
        print(f"text-only: {_fmt(runs['text'])}", flush=True)
        if args.rss_concurrency:
            wide = write_tasks(folder, videos, args.rss_tasks or args.tasks)
            runs["wide"] = eval_run(
                ["omnigaia", "--data", str(wide), "--protocol", "omnigaia-paper"],
                server.base_url,
                folder / "run-wide",
                folder / "cache-wide",
                args.rss_concurrency,
            )
            print(f"cold at concurrency {args.rss_concurrency}: {_fmt(runs['wide'])}", flush=True)

    media_cold = runs["cold"].cpu_s - runs["text"].cpu_s
    media_warm = runs["warm"].cpu_s - runs["text"].cpu_s
    rows = [
        (
            "CPU per task, cold",
            f"{runs['cold'].cpu_s / args.tasks:.2f} s",
            f"<= {MAX_CPU_PER_TASK} s",
            runs["cold"].cpu_s / args.tasks <= MAX_CPU_PER_TASK,
        ),
        ("media CPU, cold (run minus text-only run)", f"{media_cold:.1f} s", "", None),
        (
            "media CPU, warm",
            f"{media_warm:.1f} s ({100 * media_warm / media_cold:.1f} % of cold)",
            f"<= {100 * MAX_WARM_SHARE:.0f} %",
            media_warm <= MAX_WARM_SHARE * media_cold,
        ),
        ("peak RSS, cold", f"{runs['cold'].rss_mb:.0f} MB", "", None),
    ]
    if "wide" in runs:
        rows.append(
            (
                f"peak RSS at concurrency {args.rss_concurrency}",
                f"{runs['wide'].rss_mb:.0f} MB",
                f"<= {MAX_RSS_MB:.0f} MB",
                runs["wide"].rss_mb <= MAX_RSS_MB,
            )
        )
    _table(rows + floor_rows)
    report.update(
        runs={k: {**asdict(v), "out": None} for k, v in runs.items()},
        bytes_sent=sent,
        frames_cpu_s={"omnilab": frames_ours, "ffmpeg": frames_floor},
        soundtrack_cpu_s={"omnilab": audio_ours, "ffmpeg": audio_floor},
        lower_bound_cpu_s={"walk": walk, "shrink": shrink, "soundtrack": sound},
        load_average=os.getloadavg(),
    )
    print("\n" + json.dumps(report))


Row = tuple[str, str, str, bool | None]


def _table(rows: list[Row]) -> None:
    print()
    print("| figure | value | target | |")
    print("|---|---|---|---|")
    for label, value, target, ok in rows:
        verdict = "" if ok is None else ("PASS" if ok else "MISS")
        print(f"| {label} | {value} | {target} | {verdict} |")


def _fmt(p: Proc) -> str:
    return f"wall {p.wall_s:.1f} s, CPU {p.cpu_s:.1f} s, peak RSS {p.rss_mb:.0f} MB"


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="length of each video")
    parser.add_argument(
        "--piece-minutes",
        type=float,
        default=2.0,
        help="make the long video by repeating a generated piece this long (0: encode it whole)",
    )
    parser.add_argument(
        "--footage",
        choices=["flat", "textured"],
        default="flat",
        help="flat: bench/media.py's colour blocks (x264 ultrafast, no B-frames); textured: "
        "bench/footage.py's panned textured scene (x264 veryfast, B-frames, stereo), closer to "
        "web video",
    )
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--videos", type=int, default=16, help="distinct video files")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rss-concurrency", type=int, default=64, help="0: skip that run")
    parser.add_argument("--rss-tasks", type=int, default=0, help="tasks of that run (0: --tasks)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the videos are kept (default: the omnilab cache folder's bench-media)",
    )
    parser.add_argument("--out", type=Path, default=None, help="parent of the run folders")
    parser.add_argument(
        "--floors-only", action="store_true", help="only the frames and soundtrack floors"
    )
    parser.add_argument(
        "--eval-pythonpath",
        default="",
        help="PYTHONPATH of the eval processes only (e.g. an older checkout's src, to compare)",
    )
    args = parser.parse_args()
    if args.data_dir is None:
        from omnilab.config import get_settings

        args.data_dir = get_settings().cache_dir / "bench-media"
    return args


if __name__ == "__main__":
    main()
