"""The floor of ``bench/harness.py --only e2e``: the same requests from a bare aiohttp client.

Usage::

    python bench/http_floor.py BASE_URL [--tasks 1000] [--concurrency 64]

Sends ``--tasks`` chat requests, one fresh question each, ``--concurrency`` at a time, to the
OpenAI-compatible server at ``BASE_URL`` with one aiohttp session, and decodes each reply; no
agent, no trajectory, no cache, no results file. The harness runs it as a fresh process right
after ``omnilab eval`` against the same server: its wall time (Python start-up and importing
aiohttp included) is how close to the ideal any Python client gets on this machine, and the
difference is what omnilab itself costs. The floor is bound by the server's latency, not by
the CPU: on a shared machine whose CPU speed moves by a third from minute to minute, the
difference moves with it (compare runs made at the same moment).
"""

from __future__ import annotations

import argparse
import asyncio
import json

import aiohttp


async def _send(url: str, tasks: int, concurrency: int) -> int:
    slots = asyncio.Semaphore(concurrency)
    answered = 0
    # No per-host limit, as omnilab's client has none below the concurrency it is given.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(i: int) -> None:
            nonlocal answered
            body = {"model": "bench", "messages": [{"role": "user", "content": f"Question {i}?"}]}
            async with slots, session.post(url, json=body) as response:
                reply = json.loads(await response.read())
            answered += bool(reply.get("choices"))

        await asyncio.gather(*(one(i) for i in range(tasks)))
    return answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url", help="e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    url = args.base_url.rstrip("/") + "/chat/completions"
    answered = asyncio.run(_send(url, args.tasks, args.concurrency))
    print(json.dumps({"answered": answered}))


if __name__ == "__main__":
    main()
