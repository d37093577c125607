"""The embedded runtime: tokens per second of ``local:smollm2``, installed build vs another build.

Usage::

    python bench/runtime.py [--native-lib DIR] [--tokens 128] [--repeats 5] [--rounds 3]

Each runtime is measured in a process of its own through omnilab's ``local`` adapter (so the
worker process, the chat template and the sampler settings are what users get): one warm-up
call, then ``--repeats`` greedy calls of up to ``--tokens`` tokens; the figure is the median of
completion tokens / call seconds. ``--native-lib`` names a folder of llama.cpp libraries built
another way (e.g. ``GGML_NATIVE=ON``: ``cmake -S vendor/llama.cpp -B build -DGGML_NATIVE=ON``,
then ``build/bin``); llama-cpp-python loads them through ``LLAMA_CPP_LIB_PATH``. A build that
crashes on this CPU is reported with omnilab's one-line error instead of a figure.

Figures in docs/models.md ("A portable runtime").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PROMPT = "Write a long story about a cat who learns to sail. Use many short sentences."


def measure(tokens: int, repeats: int) -> dict[str, object]:
    """Tokens per second of local:smollm2 in this process's runtime."""
    from omnilab.models import GenerateConfig, ModelError, get_model

    model = get_model("local:smollm2")
    config = GenerateConfig(max_tokens=tokens, temperature=0, seed=0)
    began = time.perf_counter()
    try:
        model.generate_sync("Say hello", config=GenerateConfig(max_tokens=4))
    except ModelError as e:
        return {"error": str(e)}
    first = time.perf_counter() - began
    rates, counts = [], []
    for _ in range(repeats):
        out = model.generate_sync(PROMPT, config=config)
        rates.append(out.usage.completion_tokens / out.latency_s)
        counts.append(out.usage.completion_tokens)
    return {
        "tokens_per_s": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        "tokens": statistics.median(counts),
        "first_call_s": first,
    }


def run(label: str, lib: str | None, tokens: int, repeats: int) -> dict[str, object]:
    env = dict(os.environ)
    if lib:
        env["LLAMA_CPP_LIB_PATH"] = lib
        env["LD_LIBRARY_PATH"] = f"{lib}:{env.get('LD_LIBRARY_PATH', '')}"
    args = [sys.executable, __file__, "--measure", "--tokens", str(tokens)]
    done = subprocess.run(
        [*args, "--repeats", str(repeats)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"label": label, "error": done.stderr.strip().splitlines()[-1:]}
    return {"label": label, **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--native-lib", default=None, help="folder of other llama.cpp libraries")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--rounds", type=int, default=1, help="alternate the runtimes this many times (noisy CPUs)"
    )
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.tokens, args.repeats)))
        return
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    runtimes = [("installed", None)] + (
        [("native-lib", args.native_lib)] if args.native_lib else []
    )
    medians: dict[str, list[float]] = {label: [] for label, _ in runtimes}
    for n in range(args.rounds):
        for label, lib in runtimes:
            row = run(label, lib, args.tokens, args.repeats)
            if "error" in row:
                print(f"round {n + 1} {label:<11} {row['error']}", flush=True)
                continue
            medians[label].append(float(row["tokens_per_s"]))  # type: ignore[arg-type]
            print(
                f"round {n + 1} {label:<11} {row['tokens_per_s']:7.1f} tok/s (min {row['min']:.1f}, "
                f"max {row['max']:.1f}; {row['tokens']:.0f} tokens per call; first call "
                f"{row['first_call_s']:.1f} s; load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    got = {label: statistics.median(v) for label, v in medians.items() if v}
    for label, value in got.items():
        print(f"{label:<11} median over rounds {value:7.1f} tok/s")
    if len(got) == 2:
        print(f"installed / native-lib: {got['installed'] / got['native-lib']:.2f}")


if __name__ == "__main__":
    main()
