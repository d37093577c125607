"""The ``master`` agent's coordination overhead: a round's execution stage against its slowest
agent, latency and model calls per query, with one local fake server per role.

Usage::

    python bench/master.py [--queries 10] [--rounds 1]

Each role's model is an OpenAI-compatible fake server (``omnilab.models.fake_server``) that
waits a fixed time per request: master 0.05 s, text 0.10 s, image 0.20 s, audio 0.30 s, video
0.40 s. A query has a text file, an image, an audio file and a 4-second video with sound (so
the audio agent has two inputs, the file and the video's track). Every server answers one JSON
object that fits both of its role's schemas (the master's plan and decision; a modality agent's
summary and its one answer), so the loop always runs the same calls: perception of the five
inputs, then per round a plan naming every agent, the four agents' answers and a decision
(``--rounds`` > 1: not final until the last round).

The execution stage of a round is timed from the first agent call's start to the last one's end
(the trajectory's model calls: event time minus ``latency_s``); the target is at most 1.2x the
slowest single agent call of that round (the agents run concurrently). Printed per query: wall
seconds, model calls; then the stage ratios (best, median, worst) and ``uptime``'s load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.inputs import InputSet
from omnilab.media import synth
from omnilab.models import get_model
from omnilab.models.events import ModelCallEvent
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.trajectory import TrajectoryWriter

LATENCY = {"master": 0.05, "text": 0.10, "image": 0.20, "audio": 0.30, "video": 0.40}
AGENTS = ("text_agent", "image_agent", "audio_agent", "video_agent")


def _master_reply(final: bool) -> str:
    plan = [{"agent_name": a, "questions": [f"What does the {a[:-6]} show?"]} for a in AGENTS]
    return json.dumps(
        {
            "user_intent": "describe the inputs",
            "agent_instructions": plan,
            "final_answer": "They show a test pattern, a tone and a note.",
            "is_final": final,
            "suggestions_for_next_round": ["check the timings"],
        }
    )


_AGENT_REPLY = json.dumps({"description": "a synthetic test input", "answers": ["a pattern"]})


def make_inputs(folder: Path) -> list[Path]:
    note = folder / "note.txt"
    note.write_text("The test card was shown at 10:00.", encoding="utf-8")
    return [
        note,
        synth.make_image(folder / "card.png"),
        synth.make_audio(folder / "tone.wav", duration=2.0),
        synth.make_video(folder / "clip.mp4", duration=4.0, audio=True),
    ]


def stage_ratios(calls: list[ModelCallEvent]) -> list[float]:
    """Per round: the execution stage's span over its slowest call."""
    rounds: dict[str, list[ModelCallEvent]] = {}
    for call in calls:
        context = call.context_id or ""
        role = call.role or ""
        if role in LATENCY and role != "master" and "-r" in context:
            rounds.setdefault(context.split("-r")[1].split("-")[0], []).append(call)
    ratios = []
    for group in rounds.values():
        start = min(c.timestamp - c.latency_s for c in group)
        end = max(c.timestamp for c in group)
        ratios.append((end - start) / max(c.latency_s for c in group))
    return ratios


async def one_query(
    folder: Path, files: list[Path], urls: dict[str, str], rounds: int, n: int
) -> tuple[float, int, list[float]]:
    models = {r: get_model(f"vllm:qwen2.5-omni@{u}", cache=False) for r, u in urls.items()}
    task = AgentTask(
        id=f"q{n}", question="What do the inputs show?", inputs=list(InputSet.from_paths(files))
    )
    path = folder / f"run{n}.jsonl"
    started = time.perf_counter()
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=models["master"],
            roles=models,
            tools=None,
            budgets=Budgets(),
            workspace=folder / f"ws{n}",
            trajectory=writer,
        )
        traj = await get_agent("master", max_rounds=rounds).run(task, ctx)
    wall = time.perf_counter() - started
    assert traj.answer is not None, traj.status
    return wall, len(traj.model_calls), stage_ratios(traj.model_calls)


async def main(queries: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        files = make_inputs(folder)
        servers = {}
        for role, latency in LATENCY.items():
            reply = _master_reply(True) if role == "master" else _AGENT_REPLY
            servers[role] = stack.enter_context(
                FakeOpenAIServer(latency_s=latency, default=reply_text(reply))
            )
        urls = {r: s.base_url for r, s in servers.items()}
        walls, counts, ratios = [], [], []
        for n in range(queries):
            if rounds > 1:  # plan and decision of each round but the last: not final
                not_final = reply_text(_master_reply(False))
                servers["master"].push(
                    *[r for _ in range(rounds - 1) for r in (not_final, not_final)]
                )
            wall, count, ratio = await one_query(folder, files, urls, rounds, n)
            walls.append(wall)
            counts.append(count)
            ratios += ratio
            print(f"query {n}: {wall:.2f} s, {count} model calls, stage/slowest {ratio}")
        sequential = sum(v for r, v in LATENCY.items() if r != "master")
        print(
            f"\nlatency per query: best {min(walls):.2f} s, median {statistics.median(walls):.2f} s;"
            f" model calls per query: {statistics.mean(counts):g}"
        )
        print(
            f"execution stage / slowest agent: best {min(ratios):.3f}, median "
            f"{statistics.median(ratios):.3f}, worst {max(ratios):.3f} (target <= 1.2; the agents "
            f"one after another would take {sequential / LATENCY['video']:.2f}x)"
        )
        print(f"load average: {os.getloadavg()[0]:.2f} (1 min), cores: {os.cpu_count()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(main(args.queries, args.rounds))
