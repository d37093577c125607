"""Evaluation-runner benchmark: wall time against the ideal, and memory against the task count.

Usage::

    python bench/harness.py [--tasks 1000] [--concurrency 64] [--latency 0.2] [--calls 3]
                            [--out DIR] [--memory-sizes 250,1000,2000] [--e2e-tasks 1000]
                            [--e2e-repeats 1] [--only throughput|memory|e2e]

1. Throughput: ``--tasks`` OmniGAIA-format tasks, each with one generated image, run through
   :func:`omnilab.bench.runner.execute` (results appended and fsynced, trajectories written,
   answers scored). The model is a scripted one that answers after ``--latency`` seconds and
   makes every task take ``--calls`` calls. With ``--backend ray`` the local Ray is started
   before the clock runs (as a cluster is up before a run connects; its start-up is printed
   apart), the target is 1.5x, and the same agents also run on ``local`` for the cost per task. Two agents: ``stand-in`` (the calls and a minimal
   trajectory, nothing else: what the runner itself costs) and the real ``tir`` agent calling
   ``read_image`` (a real crop of the task's image) on each call but the last. The ideal wall
   time is ``tasks x calls x latency / concurrency``; the target is within 1.3x of it.
2. Memory: the ``tir`` run in a fresh process per size in ``--memory-sizes``, with a smaller
   latency; the peak resident memory while tasks run, minus the resident memory once the
   dataset is loaded, should not grow with the number of tasks.
3. End to end over HTTP (``--e2e-tasks``, default 1000): ``omnilab eval jsonl`` as a user runs
   it, a whole process with default settings, ``--concurrency`` tasks at once, one model call
   per task, against a local OpenAI-compatible server answering in ``--latency`` seconds, every
   prompt fresh (an empty reply cache). The ideal is ``tasks x latency / concurrency``; the
   target is within 1.5x of it, start-up included (with omnilab's bytecode compiled first, as
   an installed package has it). The peak of requests in flight at the server is printed too
   (the per-endpoint limit must not cap it), and the same requests from a bare aiohttp client
   (``bench/http_floor.py``, a fresh process) right after: how close to the ideal any Python
   client gets here, and, by difference, what omnilab itself costs. ``--e2e-repeats N`` runs
   the pair N times and prints the median, best and worst ratio: this VM's CPU speed moves by
   a third from minute to minute, so one run says little; the verdict is on the median.

The run folder goes under ``--out`` (default: a temporary folder on the system temp disk); its
file system decides what the fsync of every result and trajectory event costs, so the figures
name it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnilab.agents.base import AgentContext, AgentTask
from omnilab.agents.registry import get_agent
from omnilab.bench.backends import get_backend
from omnilab.bench.runner import Components, execute, new_config, plan_run
from omnilab.bench.scoring import AnswerSetMatch, extract_answer
from omnilab.media import synth
from omnilab.models import GenerateConfig, Message, Model, ModelOutput, ToolSpec, Usage
from omnilab.models.capabilities import Capabilities
from omnilab.models.retry import RetryPolicy
from omnilab.trajectory import AnswerEvent, Event, RunEnd, RunStart, Trajectory


class LatencyScript:
    """A scripted adapter with latency: call k of a task (k = assistant turns so far) is a
    ``read_image`` call until the last, which answers. Keyed on the conversation, so concurrent
    tasks never take each other's steps (the ``scripted`` provider replays one shared list)."""

    def __init__(self, latency: float, calls: int) -> None:
        self.endpoint = "bench-latency"
        self.secrets: tuple[str, ...] = ()
        self.capabilities = Capabilities(image=True, audio=True, video=True)
        self.latency = latency
        self.calls = calls

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        await asyncio.sleep(self.latency)
        turn = sum(1 for m in messages if m.role == "assistant")
        usage = Usage(prompt_tokens=100, completion_tokens=10)
        if turn < self.calls - 1:
            return ModelOutput.tool_call(
                "read_image", {"image_ids": "image_1", "crop_box": [0, 0, 16, 12]}, usage=usage
            )
        return ModelOutput.from_text("Done. <answer>blue</answer>", usage=usage)


class StandInAgent:
    """The least an agent does: ``calls`` model calls, each recorded in the trajectory, and an
    answer. What it costs beyond the model's latency is the runner's own overhead."""

    name = "stand-in"

    def __init__(self, calls: int) -> None:
        self.calls = calls

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        writer = ctx.trajectory
        start = RunStart(
            run_id=writer.run_id, task_id=task.id, question=task.question, agent=self.name
        )
        events: list[Event] = [start]
        writer.emit(start)
        ctx.model.sink = writer  # a fresh model object per task, so no run sees another's calls
        messages = [Message.user(task.question)]
        output = ModelOutput()
        for _ in range(self.calls):
            output = await ctx.model.generate(messages)
            messages.append(output.message)
        for event in (
            AnswerEvent(text=output.text, answer=extract_answer(output.text)),
            RunEnd(status="answered", wall_s=0.0, turns=self.calls),
        ):
            writer.emit(event)
            events.append(event)
        return Trajectory(header=writer.header, events=events, path=writer.path)


def write_dataset(folder: Path, tasks: int) -> Path:
    image = synth.make_image(folder / "img.png", size=(32, 24))
    path = folder / "tasks.json"
    items = [
        {
            "id": f"t{i:05d}",
            "question": f"What colour is thing {i}?",
            "answer": "blue",
            "Level": ("Easy", "Medium", "Hard")[i % 3],
            "category": "Art",
            "omni_modal_input": [{"type": "image", "id": "image_1", "path": image.name}],
        }
        for i in range(tasks)
    ]
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process so far: all its threads, which wall time
    under other load does not isolate."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _run(
    folder: Path,
    agent: str,
    tasks: int,
    concurrency: int,
    latency: float,
    calls: int,
    backend: str = "local",
) -> dict[str, Any]:
    data = write_dataset(folder, tasks)
    config = new_config(
        "omnigaia", data, agent=agent, model="bench:latency", scorer="answer_set"
    ).model_copy(update={"tools": ["read_image"] if agent == "tir" else None})
    plan = plan_run(config, folder / "run")
    model = Model(
        LatencyScript(latency, calls),
        name="bench:latency",
        retry=RetryPolicy(max_attempts=1),
        concurrency=concurrency,  # the endpoint limit must not be the bottleneck measured
    )
    runner_agent = get_agent("tir", mode="native") if agent == "tir" else StandInAgent(calls)
    parts = Components(agent=runner_agent, model=model, scorer=AnswerSetMatch())
    base = _rss_mb()
    peak = base

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, _rss_mb())
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    cpu_before = _cpu_s()
    outcome = await execute(
        plan, concurrency=concurrency, components=parts, backend=get_backend(backend)
    )
    wall = time.perf_counter() - started
    cpu = _cpu_s() - cpu_before
    sampler.cancel()
    lines = len((folder / "run" / "results.jsonl").read_text().splitlines())
    return {
        "tasks": tasks,
        "wall_s": wall,
        "cpu_s": cpu,
        "ideal_s": tasks * calls * latency / concurrency,
        "correct": outcome.summary.pass_at_1.correct,
        "failed": outcome.summary.failed_runs,
        "result_lines": lines,
        "rss_loaded_mb": base,
        "rss_peak_mb": peak,
    }


def run_once(
    out: Path | None,
    agent: str,
    tasks: int,
    concurrency: int,
    latency: float,
    calls: int,
    backend: str = "local",
) -> dict[str, Any]:
    """One measured run in this process, in a fresh folder under ``out``."""
    with tempfile.TemporaryDirectory(dir=out, prefix="harness-") as tmp:
        return asyncio.run(_run(Path(tmp), agent, tasks, concurrency, latency, calls, backend))


def run_e2e(out: Path | None, tasks: int, concurrency: int, latency: float) -> dict[str, Any]:
    """``omnilab eval`` in a fresh process against a counting fake server (see the docstring)."""
    from omnilab.models.fake_server import FakeOpenAIServer, reply_text

    class Counting(FakeOpenAIServer):
        def __init__(self) -> None:
            super().__init__(latency_s=latency, default=reply_text("<answer>blue</answer>"))
            self.arrivals: list[float] = []

        def _next(self, request: Any) -> Any:
            self.arrivals.append(time.monotonic())
            return super()._next(request)

    with tempfile.TemporaryDirectory(dir=out, prefix="harness-e2e-") as tmp:
        folder = Path(tmp)
        data = folder / "tasks.jsonl"
        lines = [
            json.dumps({"id": f"q{i}", "question": f"Fresh question {i}?", "answer": "blue"})
            for i in range(tasks)
        ]
        data.write_text("\n".join(lines) + "\n", encoding="utf-8")
        # As an installed package starts: its bytecode compiled (pip does it at install; a
        # checkout under PYTHONDONTWRITEBYTECODE=1 would compile every module on every start).
        _compile_package()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("OMNILAB_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env["OMNILAB_CACHE_DIR"] = str(folder / "cache")  # fresh prompts, empty cache
        server = Counting()
        with server:
            cmd = [sys.executable, "-m", "omnilab", "eval", "jsonl", "--data", str(data)]
            cmd += ["--model", f"vllm:bench@{server.base_url}", "--scorer", "answer_set"]
            cmd += ["--concurrency", str(concurrency), "--out", str(folder / "run")]
            cmd += ["--no-progress"]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                raise SystemExit(f"omnilab eval failed: {proc.stderr.strip()[-500:]}")
            arrivals = sorted(server.arrivals)
            floor = _floor(server.base_url, tasks, concurrency)
        # CPU seconds of the eval process: unlike wall time, barely moved by other load.
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        # Requests in flight: each lasts `latency` at the server, so those that arrived within
        # one latency of each other overlapped.
        peak, lo = 0, 0
        for hi, t in enumerate(arrivals):
            while arrivals[lo] <= t - latency:
                lo += 1
            peak = max(peak, hi - lo + 1)
        results = len((folder / "run" / "results.jsonl").read_text().splitlines())
        return {
            "wall_s": wall,
            "cpu_s": cpu,
            "floor_s": floor,
            "ideal_s": tasks * latency / concurrency,
            "requests": len(arrivals),
            "peak_in_flight": peak,
            "results": results,
        }


def _floor(base_url: str, tasks: int, concurrency: int) -> float:
    """Wall seconds of ``bench/http_floor.py`` (a bare aiohttp client, fresh process) sending
    the same number of requests to the same server."""
    script = Path(__file__).with_name("http_floor.py")
    cmd = [sys.executable, str(script), base_url, "--tasks", str(tasks)]
    cmd += ["--concurrency", str(concurrency)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0 or json.loads(proc.stdout)["answered"] != tasks:
        raise SystemExit(f"the bare client failed: {(proc.stderr or proc.stdout)[-500:]}")
    return wall


def _compile_package() -> None:
    import compileall

    import omnilab

    compileall.compile_dir(Path(omnilab.__file__).parent, quiet=1)


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def _fs(path: Path) -> str:
    proc = subprocess.run(
        ["df", "--output=fstype", str(path)], capture_output=True, text=True, check=False
    )
    return proc.stdout.split()[-1] if proc.returncode == 0 else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--memory-sizes", default="250,1000,2000")
    parser.add_argument("--e2e-tasks", type=int, default=1000)
    parser.add_argument("--e2e-repeats", type=int, default=1, help="e2e: runs of the pair")
    parser.add_argument("--only", choices=("throughput", "memory", "e2e"), default=None)
    parser.add_argument(
        "--backend", default="local", help="throughput: local or ray (a local Ray on this machine)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = run_once(args.out, "tir", args.tasks, args.concurrency, args.latency, args.calls)
        print(json.dumps(result))
        return
    where = args.out or Path(tempfile.gettempdir())
    print(f"run folder on {where} ({_fs(where)}); {os.cpu_count()} CPUs; load {_load()}")
    if args.only in (None, "throughput"):
        _throughput(args)
    if args.only in (None, "memory"):
        _memory(args)
    if args.only in (None, "e2e"):
        print(
            f"end to end: omnilab eval, {args.e2e_tasks} one-call tasks over HTTP x "
            f"{args.latency * 1000:.0f} ms, concurrency {args.concurrency}, default settings"
        )
        _e2e(args)


def _e2e(args: argparse.Namespace) -> None:
    ratios: list[float] = []
    costs: list[float] = []
    for _ in range(max(1, args.e2e_repeats)):
        r = run_e2e(args.out, args.e2e_tasks, args.concurrency, args.latency)
        ratio = r["wall_s"] / r["ideal_s"]
        verdict = "PASS" if ratio <= 1.5 else "FAIL"
        print(
            f"  wall {r['wall_s']:.2f} s (whole process), ideal {r['ideal_s']:.2f} s, ratio "
            f"{ratio:.2f} (<= 1.5: {verdict}); eval process CPU {r['cpu_s']:.2f} s; peak "
            f"{r['peak_in_flight']} requests in flight; "
            f"{r['requests']} requests, {r['results']} results; load after {_load()}"
        )
        print(
            f"  floor: a bare aiohttp client (bench/http_floor.py, fresh process) sent the same "
            f"requests to the same server just after in {r['floor_s']:.2f} s "
            f"({r['floor_s'] / r['ideal_s']:.2f}x ideal); omnilab's own cost "
            f"{r['wall_s'] - r['floor_s']:+.2f} s"
        )
        ratios.append(ratio)
        costs.append(r["wall_s"] - r["floor_s"])
    if len(ratios) > 1:
        median = statistics.median(ratios)
        verdict = "PASS" if median <= 1.5 else "FAIL"
        print(
            f"  over {len(ratios)} runs: ratio median {median:.2f} (<= 1.5: {verdict}), best "
            f"{min(ratios):.2f}, worst {max(ratios):.2f}; omnilab's own cost median "
            f"{statistics.median(costs):+.2f} s"
        )


def _throughput(args: argparse.Namespace) -> None:
    print(
        f"throughput: {args.tasks} tasks x {args.calls} calls x {args.latency * 1000:.0f} ms, "
        f"concurrency {args.concurrency}, backend {args.backend}"
    )
    target = 1.5 if args.backend == "ray" else 1.3
    if args.backend == "ray":
        # The local Ray is started before the clock runs, as a cluster is up before a run
        # connects to it: its start-up is a cost of the machine, not of each run, and is
        # printed apart. Each run still starts its own actors (counted).
        from omnilab.bench.backends_ray import RayBackend

        started = time.perf_counter()
        RayBackend()._ray()
        print(f"  local Ray started in {time.perf_counter() - started:.2f} s (not counted)")
    for agent in ("stand-in", "tir"):
        r = run_once(
            args.out, agent, args.tasks, args.concurrency, args.latency, args.calls, args.backend
        )
        ratio = r["wall_s"] / r["ideal_s"]
        verdict = "PASS" if ratio <= target else "FAIL"
        print(
            f"  {agent:>8}: wall {r['wall_s']:.2f} s, ideal {r['ideal_s']:.2f} s, ratio "
            f"{ratio:.3f} (<= {target}: {verdict}); process CPU {r['cpu_s']:.2f} s; "
            f"{r['result_lines']} result lines, "
            f"{r['correct']} correct, {r['failed']} failed"
        )
        if args.backend != "local":
            base = run_once(
                args.out, agent, args.tasks, args.concurrency, args.latency, args.calls, "local"
            )
            extra = (r["wall_s"] - base["wall_s"]) / args.tasks * args.concurrency
            print(
                f"  {'':>8}  local: wall {base['wall_s']:.2f} s; {args.backend} costs "
                f"{extra * 1000:+.1f} ms per task (wall difference x concurrency / tasks)"
            )


def _memory(args: argparse.Namespace) -> None:
    print("memory (fresh process per size, latency 20 ms):")
    for size in (int(s) for s in args.memory_sizes.split(",") if s):
        cmd = [sys.executable, __file__, "--child", "--tasks", str(size), "--latency", "0.02"]
        cmd += ["--concurrency", str(args.concurrency), "--calls", str(args.calls)]
        if args.out is not None:
            cmd += ["--out", str(args.out)]
        child = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        growth = child["rss_peak_mb"] - child["rss_loaded_mb"]
        print(
            f"  {size:>5} tasks: {child['rss_loaded_mb']:.1f} MB after loading, peak "
            f"{child['rss_peak_mb']:.1f} MB while running (+{growth:.1f} MB), "
            f"wall {child['wall_s']:.2f} s"
        )


if __name__ == "__main__":
    main()
