"""Helpers of the master agent tests (no tests here): a pool model that answers each stage.

``StageModel`` answers by the response format's name (the stage): the next reply queued for
that stage (the last one repeats), else a default that fits: a summary naming the input, one
answer per question. It records each request with the times it started and ended, so tests can
see which agent was shown what and that a round's agents overlapped.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnilab.agents import AgentContext, AgentTask, Budgets, TaskInfo, get_agent
from omnilab.content import Audio, Image, Text, Video
from omnilab.inputs import InputSet
from omnilab.models.capabilities import Capabilities
from omnilab.models.model import Model
from omnilab.models.retry import RetryPolicy
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec
from omnilab.trajectory import Trajectory, TrajectoryWriter, read_trajectory

ALL = Capabilities(image=True, audio=True, video=True)
TEXT = Capabilities()
IMAGE = Capabilities(image=True, video_frames=4)
AUDIO = Capabilities(audio=True)

REASONING = "MasterReasoningStructure"
DECISION = "MasterDecisionStructure"
ANSWERS = "AgentAnswers"
SUMMARY = "InputSummary"


def plan(intent: str = "find it", **questions: list[str]) -> dict[str, Any]:
    """A reasoning reply: ``plan(image_agent=["q1"])``."""
    return {
        "user_intent": intent,
        "agent_instructions": [{"agent_name": n, "questions": qs} for n, qs in questions.items()],
    }


def decision(answer: str, final: bool, *suggestions: str) -> dict[str, Any]:
    return {
        "final_answer": answer,
        "is_final": final,
        "suggestions_for_next_round": list(suggestions) or ["check again"],
    }


@dataclass
class Request:
    stage: str
    messages: list[Message]
    config: GenerateConfig
    start: float
    end: float = 0.0

    @property
    def parts(self) -> list[Any]:
        return [p for m in self.messages for p in m.content]

    @property
    def text(self) -> str:
        return "\n".join(m.text for m in self.messages)

    def media(self, kind: type) -> list[Any]:
        return [p for p in self.parts if isinstance(p, kind)]


@dataclass
class StageModel:
    """A provider adapter answering by stage (see the module docstring)."""

    capabilities: Capabilities = field(default_factory=lambda: ALL)
    replies: dict[str, list[Any]] = field(default_factory=dict)
    latency_s: float = 0.0
    delays: list[float] = field(default_factory=list)
    """Seconds to wait on each call in turn (then ``latency_s``)."""
    endpoint: str = "stage-model"
    secrets: tuple[str, ...] = ()
    requests: list[Request] = field(default_factory=list)

    def stage(self, name: str) -> list[Request]:
        return [r for r in self.requests if r.stage == name]

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        assert config.response_format is not None, "every master-agent call asks for a schema"
        name = config.response_format.name
        request = Request(name, list(messages), config, time.perf_counter())
        self.requests.append(request)
        wait = self.delays.pop(0) if self.delays else self.latency_s
        if wait:
            await asyncio.sleep(wait)
        queued = self.replies.get(name)
        if queued:
            reply = queued.pop(0) if len(queued) > 1 else queued[0]
        else:
            reply = self._default(name, config, messages)
        request.end = time.perf_counter()
        return ModelOutput.from_text(reply if isinstance(reply, str) else json.dumps(reply))

    def _default(self, name: str, config: GenerateConfig, messages: Sequence[Message]) -> Any:
        last = messages[-1].text
        if name == SUMMARY:
            found = re.search(r"input (\S+) above", last)
            return {"description": f"summary of {found.group(1) if found else '?'}"}
        if name == ANSWERS:
            assert config.response_format is not None
            count = config.response_format.json_schema["properties"]["answers"]["minItems"]
            return {"answers": [f"{self.endpoint} answer {i}" for i in range(1, count + 1)]}
        if name == REASONING:
            return plan(text_agent=["What do the notes say?"])
        return decision("done", True)


def model(adapter: StageModel, name: str) -> Model:
    adapter.endpoint = name
    return Model(adapter, name=f"stage:{name}", retry=RetryPolicy(max_attempts=1, backoff_s=0))


@dataclass
class MasterRun:
    trajectory: Trajectory
    workspace: Path

    @property
    def notes(self) -> list[Any]:
        return [e for e in self.trajectory.events if e.kind == "note"]

    def notes_of(self, label: str) -> list[Any]:
        return [n for n in self.notes if n.label == label]

    @property
    def errors(self) -> list[Any]:
        return [e for e in self.trajectory.events if e.kind == "error"]

    @property
    def stats(self) -> dict[str, float]:
        assert self.trajectory.run_end is not None
        return self.trajectory.run_end.stats


def run_master(
    tmp_path: Path,
    agent_model: Model,
    files: Sequence[Path] = (),
    question: str = "What happened?",
    *,
    roles: dict[str, Model] | None = None,
    options: TaskInfo | None = None,
    budgets: Budgets | None = None,
    **agent_options: Any,
) -> MasterRun:
    """Run the ``master`` agent once and read its trajectory back from the file."""
    workspace = tmp_path / "ws"
    path = tmp_path / "run.jsonl"
    task = AgentTask(
        id="t1",
        question=question,
        inputs=list(InputSet.from_paths(list(files))),
        metadata=options or TaskInfo(),
    )
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=agent_model,
            roles=roles or {},
            tools=None,
            budgets=budgets or Budgets(),
            workspace=workspace,
            trajectory=writer,
        )
        asyncio.run(get_agent("master", **agent_options).run(task, ctx))
    return MasterRun(read_trajectory(path), workspace)


__all__ = [
    "ALL",
    "ANSWERS",
    "AUDIO",
    "DECISION",
    "IMAGE",
    "REASONING",
    "SUMMARY",
    "TEXT",
    "Audio",
    "Image",
    "MasterRun",
    "Request",
    "StageModel",
    "Text",
    "Video",
    "decision",
    "model",
    "plan",
    "run_master",
]
