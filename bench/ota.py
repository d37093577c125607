"""OmniAgent (``ota``) benchmark: the context does not grow with the video, and media per action
are fast on a long 720p video.

1. Context vs. video length: the same scripted actions (frames, audio, clip, frames, answer) run
   on a 1-minute and a 60-minute 720p video against a recording OpenAI-compatible server
   (``models/fake_server.py``) with an omni model's flags, so frames, audio and the clip travel
   inline as base64. Compared at the last turn: the request's bytes, its media parts, and its
   text tokens as the embedded model layer counts them (the ``local`` provider's chat layout,
   tokenized by llama.cpp with SmolLM2's vocabulary). Target: within 1.2x. Only the current
   turn's media may be in a request (checked on every request).
2. Media per action on the 60-minute video, through the agent's own environment
   (``agents/ota/env.py``) with an empty media cache each run: 50 exact frames spread over the
   video (target <= 1.5 s), 60 s of 16 kHz audio (<= 0.3 s), a 30 s H.264 clip with sound
   (<= 3 s); then each again from the cache. Then, unless ``--no-before``, the same requests
   made the old way (before the speed work of issue 13), for before/after figures in one run.

Usage::

    python bench/ota.py [--data-dir DIR] [--repeat 3]

The 60-minute video is ``bench/cli.py``'s ``long_video``: ``bench/media.py``'s one-minute
1280x720 25 fps H.264/AAC file (5 s GOP), repeated by stream copy to 60 minutes (seconds instead
of the half hour a real encode takes on two cores); decoding cost per frame is that of a real
encode of the same settings. Figures are the best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cli as cli_bench  # the long-video helper
import media as media_bench
from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.agents.ota.env import OtaEnv
from omnilab.agents.ota.options import OtaOptions
from omnilab.agents.ota.protocol import Action
from omnilab.config import get_settings
from omnilab.inputs import InputSet
from omnilab.media import probe
from omnilab.models.capabilities import Capabilities
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.registry import get_model
from omnilab.trajectory import TrajectoryWriter

MAX_CONTEXT_RATIO = 1.2
MAX_FRAMES_S = 1.5
MAX_AUDIO_S = 0.3
MAX_CLIP_S = 3.0
FRAMES = 50
AUDIO_S = 60.0
CLIP_S = 30.0
_WIRE_MEDIA = ("image_url", "input_audio", "video_url")


def _turn(action: dict[str, Any], confidence: float = 0.4) -> str:
    observation = "[Frames] a numbered test pattern; [Audio] a steady tone; nothing else yet."
    think = "Evidence Review: not enough. Gap Analysis: the later minutes. Deduction: look again."
    return json.dumps(
        {"observation": observation, "think": think, "confidence": confidence, "action": action}
    )


SCRIPT = [
    _turn({"type": "get_frames", "start": 0.0, "end": 59.0, "num": 16}),
    _turn({"type": "get_audio", "start": 10.0, "end": 40.0}),
    _turn({"type": "get_clip", "start": 20.0, "end": 30.0}),
    _turn({"type": "get_frames", "start": 30.0, "end": 50.0, "num": 16}),
    _turn({"type": "answer", "content": "B"}, confidence=0.95),
]


def _media_parts(message: dict[str, Any]) -> int:
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if p.get("type") in _WIRE_MEDIA)


def _tokenizer() -> Callable[[list[dict[str, Any]]], int] | None:
    """Counts the text of a request as the local provider lays it out, with llama.cpp."""
    try:
        from llama_cpp import Llama

        from omnilab.models.providers.local_files import resolve_gguf
    except ImportError:
        return None
    path = resolve_gguf("smollm2")
    if path is None:
        return None
    llm = Llama(model_path=str(path), vocab_only=True, verbose=False)

    def count(messages: list[dict[str, Any]]) -> int:
        total = 0
        for m in messages:
            content = m["content"]
            parts = (
                [content]
                if isinstance(content, str)
                else [p.get("text", "") for p in content if p.get("type") == "text"]
            )
            text = f"<|im_start|>{m['role']}\n" + "\n".join(parts) + "<|im_end|>\n"
            total += len(llm.tokenize(text.encode(), add_bos=False, special=True))
        return total

    return count


def context_run(video: Path, workspace: Path) -> list[dict[str, Any]]:
    """The request bodies of the scripted run on ``video``."""
    with FakeOpenAIServer() as server:
        server.push(*(reply_text(r) for r in SCRIPT))
        model = get_model(f"vllm:Qwen2.5-Omni-7B@{server.base_url}")
        task = AgentTask(id="bench", question="Which?", inputs=list(InputSet.from_paths([video])))
        with TrajectoryWriter(workspace / "run.jsonl") as writer:
            ctx = AgentContext(
                model=model,
                roles={},
                tools=None,
                budgets=Budgets(),
                workspace=workspace,
                trajectory=writer,
            )
            traj = asyncio.run(get_agent("ota", dynamic_steps=False).run(task, ctx))
        if traj.status != "answered":
            sys.exit(f"the scripted run on {video.name} ended {traj.status}")
        return [r.body for r in server.chat_requests]


def _fresh_cache(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    os.environ["OMNILAB_CACHE_DIR"] = str(root)
    get_settings.cache_clear()


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (all threads) of ``fn()``."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    fn()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def media_timings(
    video: Path, repeat: int, scratch: Path
) -> dict[str, tuple[tuple[float, float], tuple[float, float]]]:
    """Best cold and cached (wall, CPU) seconds per action on ``video``."""
    source = next(iter(InputSet.from_paths([video])))
    info = probe(video)
    duration = info.duration or 3600.0
    env = OtaEnv(source, info, Capabilities(image=True, audio=True, video=True), OtaOptions())
    middle = duration / 2
    actions = {
        f"{FRAMES} exact frames (get_frames 60 s .. end-60 s)": Action(
            type="get_frames", start=60.0, end=duration - 60.0, num=FRAMES
        ),
        f"{AUDIO_S:g} s audio, 16 kHz mono WAV (get_audio)": Action(
            type="get_audio", start=middle, end=middle + AUDIO_S
        ),
        f"{CLIP_S:g} s clip, H.264 + AAC (get_clip)": Action(
            type="get_clip", start=middle + 100, end=middle + 100 + CLIP_S
        ),
    }
    out: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {}
    for name, action in actions.items():
        checked, error = env.check(action)
        assert error is None, error
        cold, warm = [], []
        for i in range(repeat):
            _fresh_cache(scratch / f"cache-{i}")
            cold.append(_timed(lambda a=checked: asyncio.run(env.perceive(a))))
            warm.append(_timed(lambda a=checked: asyncio.run(env.perceive(a))))
        out[name] = (min(cold), min(warm))  # best wall-clock run, with its CPU seconds
    return out


@contextmanager
def _old_strategy() -> Iterator[None]:
    """The media layer as it worked before issue 13's speed work, for before/after rows:
    frames in one worker with frame-threaded decoding, audio resampled frame by frame (the
    clip's old path is ``clip(smart_cut=False)``)."""
    video_module = importlib.import_module("omnilab.media.video")
    plan_module = importlib.import_module("omnilab.media._plan")
    audio_module = importlib.import_module("omnilab.media.audio")
    saved = (plan_module._workers, video_module.threads_for, audio_module._Batch.fits)
    plan_module._workers = lambda: 1
    video_module.threads_for = lambda _batch: "AUTO"
    audio_module._Batch.fits = lambda self, _frame: not self.frames  # type: ignore[method-assign]
    try:
        yield
    finally:
        plan_module._workers, video_module.threads_for, audio_module._Batch.fits = saved


def layer_timings(
    video: Path, repeat: int, scratch: Path, *, old: bool
) -> dict[str, tuple[float, float]]:
    """Best cold (wall, CPU) seconds of the three requests to the media layer alone (no JPEG
    encoding, no agent), made the old way (``old``) or the current one."""
    from omnilab.media import audio_segment, clip, frames

    info = probe(video)
    duration = info.duration or 3600.0
    middle = duration / 2
    o = OtaOptions()
    runs: dict[str, Callable[[], object]] = {
        "frames": lambda: frames(video, 60.0, duration - 60.0, FRAMES),
        "audio": lambda: audio_segment(video, middle, middle + AUDIO_S),
        "clip": lambda: clip(
            video,
            middle + 100,
            middle + 100 + CLIP_S,
            preset=o.clip_preset,
            crf=o.clip_crf,
            smart_cut=not old,
        ),
    }
    out = {}
    with _old_strategy() if old else nullcontext():
        for name, run in runs.items():
            times = []
            for i in range(repeat):
                _fresh_cache(scratch / f"layer-{old}-{i}")
                times.append(_timed(run))
            out[name] = min(times)
    return out


def main() -> None:
    args = _parse_args()
    short = media_bench.ensure_video(args.data_dir, 1.0)
    long = cli_bench.long_video(args.data_dir, 60.0, generate=False)
    print(media_bench.machine())
    for v in (short, long):
        print(f"video: {probe(v).summary()}")
    with tempfile.TemporaryDirectory(prefix="omnilab-bench-ota-") as tmp:
        scratch = Path(tmp)
        _fresh_cache(scratch / "context-cache")
        count = _tokenizer()
        rows = {}
        for label, video in (("1 min", short), ("60 min", long)):
            bodies = context_run(video, scratch / label.replace(" ", ""))
            for i, body in enumerate(bodies):
                earlier = sum(_media_parts(m) for m in body["messages"][:-1])
                if earlier:
                    sys.exit(f"{label}: request {i + 1} still holds {earlier} earlier media")
            last = bodies[-1]
            size = len(json.dumps(last).encode())
            tokens = count(last["messages"]) if count else None
            media = _media_parts(last["messages"][-1])
            rows[label] = (size, tokens, media, len(bodies))
        print("\ncontext at the last turn (same scripted actions; earlier media purged: yes)")
        print(f"{'video':<8} {'request bytes':>14} {'text tokens':>12} {'media parts':>12}")
        for label, (size, tokens, media, _n) in rows.items():
            print(
                f"{label:<8} {size:>14,} {tokens if tokens is not None else 'n/a':>12} {media:>12}"
            )
        size_ratio = rows["60 min"][0] / rows["1 min"][0]
        token_ratio = (
            rows["60 min"][1] / rows["1 min"][1] if rows["1 min"][1] and rows["60 min"][1] else None
        )
        print(
            f"ratio 60/1 min: bytes {size_ratio:.3f}"
            + (f", tokens {token_ratio:.3f}" if token_ratio is not None else "")
            + f" (target <= {MAX_CONTEXT_RATIO})"
        )
        ok = size_ratio <= MAX_CONTEXT_RATIO and (token_ratio or 1.0) <= MAX_CONTEXT_RATIO
        print("context:", "ok" if ok else "MISSED")

        print(
            f"\nmedia per action on the 60-minute video (best of {args.repeat}; cold = empty cache)"
        )
        targets = [MAX_FRAMES_S, MAX_AUDIO_S, MAX_CLIP_S]
        for (name, (cold, warm)), target in zip(
            media_timings(long, args.repeat, scratch).items(), targets, strict=True
        ):
            verdict = "ok" if cold[0] <= target else "MISSED"
            print(
                f"{name:<52} cold {cold[0]:6.3f} s (CPU {cold[1]:6.3f} s)  "
                f"cached {warm[0]:6.3f} s  target {target:g} s {verdict}"
            )
        if not args.no_before:
            print(
                f"\nthe media layer alone, before/after (best of {args.repeat}, cold); before = "
                "one frame worker with frame threads, audio resampled frame by frame, the clip "
                "encoded whole"
            )
            before = layer_timings(long, args.repeat, scratch, old=True)
            after = layer_timings(long, args.repeat, scratch, old=False)
            for name, (wall, cpu) in before.items():
                now = after[name]
                print(
                    f"{name:<8} before {wall:6.3f} s (CPU {cpu:6.3f} s)  "
                    f"after {now[0]:6.3f} s (CPU {now[1]:6.3f} s)"
                )
    print(f"\nload average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=get_settings().cache_dir / "bench",
        help="where the test videos are kept (default: the omnilab cache folder)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument(
        "--no-before", action="store_true", help="skip the rows measured the old way"
    )
    return parser.parse_args()


if __name__ == "__main__":
    main()
