"""Trajectory write and read throughput, and bytes per task, with full model inputs recorded.

Usage::

    python bench/trajectories.py [--tasks 200] [--turns 3] [--observation-chars 1000]

Each task is a ``tir``-shaped run driven through :class:`omnilab.agents.session.AgentRun`
with a scripted model (no latency): a system prompt, a first message with an image, then
``--turns`` calls, each but the last calling a tool whose result is ``--observation-chars``
characters of text, and an answer. Printed: bytes per task on disk, what the same inputs
would take stored whole on every call (schema 2 stores each context's messages once), the
writer's throughput (the runs' events written again into fresh files: encoding, media hashes
and writes, without the fsync each file gets on close, which the disk decides) and the
reader's.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from omnilab.agents import AgentContext, AgentTask, Budgets
from omnilab.agents.session import AgentRun
from omnilab.content import Image
from omnilab.media import synth
from omnilab.models import Message, Model, ModelOutput
from omnilab.models.events import ModelCallEvent
from omnilab.models.providers.scripted import ScriptedAdapter, text, tool_call
from omnilab.tools import Tool, tool
from omnilab.trajectory import Event, RunStatus, TrajectoryWriter, read_trajectory


def make_tool(chars: int) -> Tool:
    @tool
    def look(query: str) -> str:
        """Look something up.

        Args:
            query: What to look up.
        """
        return (query + " ") * (chars // (len(query) + 1))

    return look


async def one_task(path: Path, image: Path, turns: int, chars: int, n: int) -> list[Event]:
    steps = [tool_call("look", {"query": f"q{n}-{i}"}) for i in range(turns - 1)]
    adapter = ScriptedAdapter([*steps, text("<answer>blue</answer>")], name="scripted:bench")
    model = Model(adapter, name="scripted:bench")
    look = make_tool(chars)
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(model, {}, None, Budgets(), path.parent, writer)
        run = AgentRun(AgentTask(id=f"t{n}", question="What colour?"), ctx, agent="bench")

        async def loop() -> RunStatus:
            chat = run.context()
            run.add(chat, Message.system("You are an omni-modal assistant. " * 20))
            run.add(chat, Message.user("image_1:", Image(path=image), "What colour?"))
            while True:
                output: ModelOutput | None = await run.call("agent", chat, tools=[look])
                assert output is not None
                if not output.tool_calls:
                    return run.answer(output)
                await run.run_tools(output.tool_calls, chat, [look])

        traj = await run.execute(loop)
    return traj.events


def whole_inputs(events: list[Event]) -> int:
    """Bytes of every call's input messages, were each stored whole."""
    return sum(
        len(m.model_dump_json())
        for e in events
        if isinstance(e, ModelCallEvent) and e.sent is not None
        for m in e.sent.messages
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--observation-chars", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        image = synth.make_image(folder / "img.png", size=(32, 24))
        runs = [
            asyncio.run(
                one_task(folder / f"t{n}.jsonl", image, args.turns, args.observation_chars, n)
            )
            for n in range(args.tasks)
        ]
        whole = sum(whole_inputs(events) for events in runs)
        wrote = 0.0
        for n, events in enumerate(runs):
            writer = TrajectoryWriter(folder / f"w{n}.jsonl")
            started = time.perf_counter()
            for event in events:
                writer.emit(event)
            wrote += time.perf_counter() - started
            writer.close()
        files = sorted(folder.glob("w*.jsonl"))
        size = sum(p.stat().st_size for p in files)
        events = sum(len(e) for e in runs)
        started = time.perf_counter()
        assert sum(len(read_trajectory(p).events) for p in files) == events
        read = time.perf_counter() - started
    print(
        f"{args.tasks} tasks x {args.turns} calls, observations of {args.observation_chars} chars"
    )
    print(
        f"  on disk: {size / args.tasks:,.0f} bytes per task (inputs stored whole on every "
        f"call would add {whole / args.tasks:,.0f} bytes of messages per task)"
    )
    print(
        f"  write: {events / wrote:,.0f} events/s, {size / wrote / 1e6:.2f} MB/s, "
        f"{wrote / args.tasks * 1000:.2f} ms per task"
    )
    print(f"  read back: {events / read:,.0f} events/s, {size / read / 1e6:.2f} MB/s")


if __name__ == "__main__":
    main()
