"""The release's modality-agent calls (huawei-lin/Agent-Omni ``src/subagents/*``): free text,
one question per call (per batch of media, :mod:`.release_media`), the replies joined.

Perception asks each modality agent "Summarize the provided video." (image, audio, text: its own kind);
execution asks each sub-question in a call of its own. The video and audio agents' calls carry
the system prompt "You are a helpful assistant.", the image and text agents' none; the text
agent's ``<think>`` part is removed (``postprocessing``). Used under ``rules="release"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from omnilab.agents.master import release
from omnilab.agents.master.options import MasterOptions
from omnilab.agents.master.pool import ModalityAgent
from omnilab.agents.master.release_media import batches
from omnilab.agents.master.structured import Reply
from omnilab.agents.session import AgentRun
from omnilab.content import Text
from omnilab.models.types import Message

__all__ = ["FreeTextAgents", "run_all"]

_NOTE_CHARS = 300

T = TypeVar("T")


async def run_all(calls: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Await ``calls`` concurrently; the first failure (a model error) cancels the rest and is
    raised as itself, so the run session ends the run as for any model failure."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in calls]
    except ExceptionGroup as e:
        raise e.exceptions[0] from None
    return [t.result() for t in tasks]


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _NOTE_CHARS else flat[: _NOTE_CHARS - 1] + "…"


class FreeTextAgents:
    """The modality agents of one run, asked the release's way (see the module docstring)."""

    def __init__(self, run: AgentRun, options: MasterOptions, views: Path) -> None:
        self.run_ = run
        self.options = options
        self.views = views

    async def summaries(self, agents: list[ModalityAgent]) -> dict[str, str] | None:
        """The release's ``*_summarize``: one free-text summary per modality, concurrently;
        ``None`` when time ran out."""
        calls = [
            self.ask(a, release.text(f"summary.{a.modality}"), f"{a.modality}-perception")
            for a in agents
        ]
        found: dict[str, str] = {}
        for agent, text in zip(agents, await run_all(calls), strict=True):
            if text is None:
                return None
            found[agent.modality] = text
            self.run_.note(
                "perception", f"{agent.name}: {_short(text)}", agent=agent.name, summary=text
            )
        return found

    async def answers(
        self, agent: ModalityAgent, questions: list[str], number: int
    ) -> Reply | None:
        """The release's execution: one free-text call per question, concurrently."""
        names = [f"{agent.modality}-r{number}-q{i}" for i in range(1, len(questions) + 1)]
        found = await run_all(
            [self.ask(agent, q, n) for q, n in zip(questions, names, strict=True)]
        )
        answers = [a for a in found if a is not None]
        if len(answers) < len(found):
            return None
        return Reply({"answers": answers}, "\n\n".join(answers))

    async def ask(self, agent: ModalityAgent, question: str, name: str) -> str | None:
        """``agent``'s answer to one question: a free-text call per batch of its inputs
        (:func:`~omnilab.agents.master.release_media.batches`), the replies joined as they are;
        ``None`` when time ran out."""
        run = self.run_
        caps = run.models[agent.modality].capabilities
        replies: list[str] = []
        for number, parts in enumerate(await batches(agent, caps, self.views, self.options), 1):
            chat = run.context(agent.modality, name=name if number == 1 else f"{name}-b{number}")
            if agent.modality in ("video", "audio"):
                run.add(chat, Message.system(release.text("system")))
            run.add(chat, Message(role="user", content=[*parts, Text(text=question)]))
            output = await run.call(
                agent.modality, chat, config=self.options.generate_for(agent.modality)
            )
            if output is None:
                return None
            replies.append(output.text)
        reply = "".join(replies)  # results[i].content += response.content
        return release.strip_think(reply) if agent.modality == "text" else reply
