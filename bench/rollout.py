"""Token-exact rollouts against plain ``eval``: rollouts per second and CPU seconds per rollout.

Two backends, each measured both ways on the same tasks: the embedded model (``--model``,
``local:smollm2``) and a fake OpenAI-compatible server in this process (``vllm:fake@...``), whose
plain path answers ``/chat/completions`` and whose token-exact path answers ``/completions`` with
vLLM's fields (``token_ids``, ``logprobs.token_logprobs``) for a token-id prompt, the same reply
text both ways. The fake server's policy tokenizer is a one-id-per-character ChatML stand-in (no
transformers needed; it converts through ``utf-32`` arrays, at C speed as a real tokenizer runs),
so that row measures omnilab's own client-side work (template, ledger, HTTP, trajectory ids), not
a tokenizer's. The server runs in a child process (``--fake-server process``, the default), as a
real server does: its CPU is not the client's and is not counted; with ``--fake-server thread``
its threads run in this process, as before, and count, which adds their contention for the
interpreter lock with the client's event loop (it grew with the client's own work: about
+0.1 ms per token-exact rollout on the fake server's threads when this process ran both). Either
way it reads the request bodies without parsing them (a real server's JSON parsing is not the
client's CPU), alike on both paths.

Both paths run the same generated tasks with the same agent, model, budgets and seeds in one
process: each path runs once unmeasured first (to load its model into the worker), then
``--rounds`` measured rounds of each, interleaved; the table shows each path's round of median
CPU per rollout. The agents' answers differ between the paths (a 135M model sampling at 0.7 may loop on
empty replies), so besides CPU per rollout the table gives CPU per model call and per generated
token, the fair comparison: ``omnilab.bench.runner.evaluate`` with the plain embedded model, then
``omnilab.rl.rollout`` through its token-exact twin. CPU seconds count this process and the
llama.cpp worker process (read from ``/proc``). The token-exact path samples with the plain
path's model (each sampled id's logprob read from the last position's logits, none kept for
every position), renders the template (compiled once) and tokenizes in the worker, and stores ids
in the trajectory. The target is <= 10 % more CPU (per generated token, with this caveat).

Usage::

    python bench/rollout.py [--tasks 4] [--samples 2] [--max-tokens 32] [--model local:smollm2]
                            [--backends embedded,fake] [--rounds 5] [--fake-samples 25]
                            [--fake-server process|thread]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from omnilab.agents.base import Budgets
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import Components, evaluate, new_config
from omnilab.models import get_model
from omnilab.models.fake_server import FakeOpenAIServer, FakeReply, RecordedRequest, reply_text
from omnilab.models.providers import local_runtime
from omnilab.rl import rollout

_TICK = os.sysconf("SC_CLK_TCK")
_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"
_REPLY = "The sum is <answer>4</answer>."
"""What the fake server answers every call with, on both paths."""


class CharChatML:
    """The fake policy's tokenizer: ChatML over one id per character, ``|`` ends a turn."""

    tokenizer = "chars"

    async def render(self, chat: list[dict[str, Any]], *, generation: bool) -> tuple[str, bool]:
        text = "".join(f"<|{m['role']}|>{m['content']}|\n" for m in chat)
        return text + ("<|assistant|>" if generation else ""), False

    async def encode(self, text: str, *, first: bool) -> list[int]:
        # At C speed, as a real (Rust) tokenizer runs: the row measures omnilab's own work.
        return array("I", text.encode(_UTF32)).tolist()

    async def decode(self, ids: list[int]) -> str:
        return array("I", ids).tobytes().decode(_UTF32)

    async def end_of_turn(self) -> tuple[int, str]:
        return ord("|"), "|"


class TokenServer(FakeOpenAIServer):
    """The fake server: chat completions on ``/chat/completions``, vLLM-style token ids on
    ``/completions`` (the prompt a list of ids; ``token_ids`` and one logprob per id back)."""

    def _next(self, request: RecordedRequest) -> FakeReply:
        super()._next(request)
        if request.path.endswith("/chat/completions"):
            return reply_text(_REPLY, completion_tokens=len(_REPLY))
        ids = [ord(c) for c in _REPLY + "|"]
        choice = {"index": 0, "text": _REPLY + "|", "finish_reason": "stop", "token_ids": ids,
                  "logprobs": {"token_logprobs": [-0.25] * len(ids)}}  # fmt: skip
        usage = {"prompt_tokens": 10, "completion_tokens": len(ids), "total_tokens": 10 + len(ids)}
        return FakeReply(body={"id": "cmpl-fake", "object": "text_completion", "model": "fake",
                               "choices": [choice], "usage": usage})  # fmt: skip


def _serve(urls: Any) -> None:
    """The child process's work: serve until killed, after putting the server's URL in ``urls``."""
    with TokenServer(keep_bodies=False) as server:
        urls.put(server.base_url)
        threading.Event().wait()


@contextlib.contextmanager
def _server_process() -> Iterator[str]:
    """The fake server in a child process (spawned: no copy of this process's state)."""
    context = multiprocessing.get_context("spawn")
    urls = context.Queue()
    child = context.Process(target=_serve, args=(urls,), daemon=True)
    child.start()
    try:
        yield str(urls.get(timeout=60))
    finally:
        child.kill()
        child.join()


@contextlib.contextmanager
def _server_thread() -> Iterator[str]:
    """The fake server in threads of this process."""
    with TokenServer(keep_bodies=False) as server:
        yield server.base_url


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
    # This process's CPU from the per-process clock (nanoseconds): os.times() counts in clock
    # ticks (10 ms), 2 to 7 % of a fake-server round. The worker's /proc figure is in ticks too,
    # against its rounds of seconds.
    return time.process_time() + _worker_cpu()


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


class Round(NamedTuple):
    """One measured run of one path."""

    wall: float
    cpu: float
    """CPU seconds of this process (all threads) and the llama.cpp worker."""
    client: float
    """CPU seconds of this process's main thread alone: the client's work (the fake server's
    threads and the worker not counted)."""
    counts: tuple[int, int, int]
    """Rollouts, model calls and completion tokens."""


async def _measure(run: Callable[[], Awaitable[Path]]) -> Round:
    wall, cpu, client = time.perf_counter(), _cpu(), time.thread_time()
    folder = await run()
    return Round(
        time.perf_counter() - wall, _cpu() - cpu, time.thread_time() - client, _counts(folder)
    )


Figures = dict[str, Round]


async def _compare(
    model: str,
    data: Path,
    root: Path,
    args: argparse.Namespace,
    samples: int,
    tokenizer: Any = None,
) -> Figures:
    """Plain ``eval`` and token-exact ``rollout`` of the same tasks with ``model``, ``samples``
    rollouts of each."""
    options = {"generate": {"max_tokens": args.max_tokens, "temperature": 0.7}}
    budgets = Budgets(max_turns=1)
    runs = 0

    async def plain() -> Path:
        nonlocal runs
        runs += 1
        config = new_config(
            "jsonl", data, agent="tir", model=model, agent_options=options,
            budgets=budgets, samples=samples, cache=False, tools=[],
        )  # fmt: skip
        plain_model = get_model(model, cache=False)
        await evaluate(config, root / f"plain-{runs}", components=Components(model=plain_model))
        return root / f"plain-{runs}"

    async def exact() -> Path:
        nonlocal runs
        runs += 1
        found = await rollout(
            "jsonl", data=data, agent="tir", model=model, samples=samples,
            run_dir=root / f"exact-{runs}", agent_options=options, budgets=budgets, tools=[],
            tokenizer=tokenizer,
        )  # fmt: skip
        if not found or not all(r.response_ids for r in found):
            raise SystemExit(f"{model}: the token-exact path recorded no token ids")
        return root / f"exact-{runs}"

    await plain()  # load each model once before measuring
    await exact()
    rounds: dict[str, list[Round]] = {"plain eval": [], "token-exact": []}
    for _ in range(args.rounds):  # interleaved, so drifts of the machine hit both paths alike
        rounds["plain eval"].append(await _measure(plain))
        rounds["token-exact"].append(await _measure(exact))
    return {path: _median(found) for path, found in rounds.items()}


def _median(found: list[Round]) -> Round:
    """The round of median CPU per rollout."""
    ordered = sorted(found, key=lambda r: r.cpu / max(r.counts[0], 1))
    return ordered[len(ordered) // 2]


async def main() -> None:
    """Run both paths on each backend and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--model", default="local:smollm2", help="the embedded backend's model")
    parser.add_argument("--backends", default="embedded,fake", help="embedded, fake or both")
    parser.add_argument(
        "--rounds", type=int, default=5,
        help="measured rounds of each path, interleaved; the table shows the median round",
    )  # fmt: skip
    parser.add_argument(
        "--fake-samples", type=int, default=25,
        help="samples per task on the fake server (its calls take ms: more for stable CPU figures)",
    )  # fmt: skip
    parser.add_argument(
        "--fake-server", choices=["process", "thread"], default="process",
        help="run the fake server in a child process (its CPU not counted, as a real server's) "
        "or in threads of this process (counted, with their contention for the interpreter lock)",
    )  # fmt: skip
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not backends or set(backends) - {"embedded", "fake"}:
        parser.error("--backends takes embedded, fake or embedded,fake")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    root = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    data = _tasks(root, args.tasks)
    table: dict[str, Figures] = {}
    if "embedded" in backends:
        table[args.model] = await _compare(args.model, data, root / "embedded", args, args.samples)
    if "fake" in backends:
        # Bodies are read, not parsed: a real server's parsing is not the client's CPU.
        serving = _server_process() if args.fake_server == "process" else _server_thread()
        with serving as url:
            name = f"vllm:fake@{url}"
            fake = await _compare(name, data, root / "fake", args, args.fake_samples, CharChatML())
            table["fake server"] = fake
    print(f"{args.tasks} tasks, tir, 1 turn; samples per task: {args.samples} embedded, "
          f"{args.fake_samples} fake server; median of {args.rounds} interleaved rounds")  # fmt: skip
    print(f"{'backend':<14} {'path':<12} {'rollouts':>8} {'per s':>8} {'CPU ms/rollout':>15} "
          f"{'CPU ms/call':>12} {'CPU ms/token':>13} {'client ms/rollout':>18}")  # fmt: skip
    for backend, figures in table.items():
        per_token, per_rollout, client = {}, {}, {}
        for name, (wall, cpu, own, (done, calls, tokens)) in figures.items():
            per_token[name] = cpu / max(tokens, 1)
            per_rollout[name] = cpu / max(done, 1)
            client[name] = own / max(done, 1)
            print(f"{backend:<14} {name:<12} {done:>8} {done / wall:>8.2f} "
                  f"{1000 * per_rollout[name]:>15.3f} {1000 * cpu / max(calls, 1):>12.3f} "
                  f"{1000 * per_token[name]:>13.3f} {1000 * client[name]:>18.3f}")  # fmt: skip

        def more(by: dict[str, float]) -> float:
            return 100 * (by["token-exact"] / by["plain eval"] - 1)

        print(
            f"{backend}: token-exact CPU overhead per generated token {more(per_token):+.1f} %, "
            f"per rollout {more(per_rollout):+.1f} % (target <= 10 %); the client's main "
            f"thread: {1000 * (client['token-exact'] - client['plain eval']):+.3f} ms per rollout "
            f"({more(client):+.1f} %)"
        )


if __name__ == "__main__":
    asyncio.run(main())
