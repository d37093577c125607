"""Token-exact rollouts against plain ``eval``: rollouts per second and CPU seconds per rollout.

Both paths run the same generated tasks with the same agent, model, budgets and seeds, one after
the other in one process (each path runs once unmeasured first, to load its model into the
worker). The agents' answers differ between the paths (a 135M model sampling at 0.7 may loop on
empty replies), so besides CPU per rollout the table gives CPU per model call and per generated
token, the fair comparison: ``omnilab.bench.runner.evaluate`` with the plain embedded model, then
``omnilab.rl.rollout`` through its token-exact twin. CPU seconds count this process and the
llama.cpp worker process (read from ``/proc``). The token-exact path loads the model with logits
for every position (``logits_all``: the logprob of each sampled id needs them), renders the
template and tokenizes in the worker, and stores ids in the trajectory. The target is <= 10 %
more CPU (per generated token, with this caveat).

Usage::

    python bench/rollout.py [--tasks 4] [--samples 2] [--max-tokens 32] [--model local:smollm2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from omnilab.agents.base import Budgets
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import Components, evaluate, new_config
from omnilab.models import get_model
from omnilab.models.providers import local_runtime
from omnilab.rl import rollout

_TICK = os.sysconf("SC_CLK_TCK")


def _worker_cpu() -> float:
    total = 0.0
    for worker in local_runtime._WORKERS.values():
        proc = worker._proc
        if proc is None or proc.poll() is not None:
            continue
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


def _cpu() -> float:
    own = os.times()
    return own.user + own.system + _worker_cpu()


def _tasks(folder: Path, count: int) -> Path:
    data = folder / "tasks.jsonl"
    rows = [
        {"id": f"t{i}", "question": f"What is {i} plus {i + 2}? Reply with the number.",
         "answer": str(2 * i + 2)}
        for i in range(count)
    ]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return data


def _counts(run: Path) -> tuple[int, int, int]:
    """Rollouts, model calls and completion tokens of a run folder."""
    results = RunDir(run).results()
    calls = sum(r.model_calls for r in results)
    return len(results), calls, sum(r.usage.completion_tokens for r in results)


async def _measure(run: Callable[[], Awaitable[Path]]) -> tuple[float, float, tuple[int, int, int]]:
    wall, cpu = time.perf_counter(), _cpu()
    folder = await run()
    return time.perf_counter() - wall, _cpu() - cpu, _counts(folder)


async def main() -> None:
    """Run both paths and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--model", default="local:smollm2")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    data = _tasks(root, args.tasks)
    options = {"generate": {"max_tokens": args.max_tokens, "temperature": 0.7}}
    budgets = Budgets(max_turns=1)
    runs = 0

    async def plain() -> Path:
        nonlocal runs
        runs += 1
        config = new_config(
            "jsonl", data, agent="tir", model=args.model, agent_options=options,
            budgets=budgets, samples=args.samples, cache=False, tools=[],
        )  # fmt: skip
        model = get_model(args.model, cache=False)
        await evaluate(config, root / f"plain-{runs}", components=Components(model=model))
        return root / f"plain-{runs}"

    async def exact() -> Path:
        nonlocal runs
        runs += 1
        await rollout(
            "jsonl", data=data, agent="tir", model=args.model, samples=args.samples,
            run_dir=root / f"exact-{runs}", agent_options=options, budgets=budgets, tools=[],
        )  # fmt: skip
        return root / f"exact-{runs}"

    await plain()  # load each model once before measuring
    await exact()
    figures = {"plain eval": await _measure(plain), "token-exact": await _measure(exact)}
    print(f"{args.tasks} tasks x {args.samples} samples, {args.model}, tir, 1 turn")
    print(f"{'path':<12} {'rollouts':>8} {'per s':>7} {'CPU s/rollout':>14} {'CPU s/call':>11} "
          f"{'CPU ms/token':>13}")  # fmt: skip
    per_token = {}
    for name, (wall, cpu, (done, calls, tokens)) in figures.items():
        per_token[name] = cpu / max(tokens, 1)
        print(f"{name:<12} {done:>8} {done / wall:>7.3f} {cpu / max(done, 1):>14.2f} "
              f"{cpu / max(calls, 1):>11.2f} {1000 * per_token[name]:>13.1f}")  # fmt: skip
    overhead = 100 * (per_token["token-exact"] / per_token["plain eval"] - 1)
    print(f"token-exact CPU overhead per generated token: {overhead:+.1f} % (target <= 10 %)")


if __name__ == "__main__":
    asyncio.run(main())
