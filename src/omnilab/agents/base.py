"""What every agent scaffold shares: the task, the run context, budgets and the protocol.

An agent is anything with a ``name`` and ``async run(task, ctx) -> Trajectory``. It writes every
step into ``ctx.trajectory`` as it happens (so a crash loses nothing) and returns the trajectory
it wrote; it raises only for configuration mistakes found before its first event
(:class:`AgentConfigError`), never for what a model or a tool does during the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from omnilab.agents.task_info import TaskInfo
from omnilab.errors import OmnilabError
from omnilab.inputs import InputFile, unique_ids
from omnilab.models.model import Model
from omnilab.tools.base import Tool
from omnilab.trajectory import Event, Trajectory, TrajectoryWriter

__all__ = [
    "Agent",
    "AgentConfigError",
    "AgentContext",
    "AgentTask",
    "Budgets",
    "EventHook",
    "TaskInputError",
]

EventHook = Callable[[Event], None]
"""Called with every event right after it is written (live views, progress bars)."""


class AgentConfigError(OmnilabError):
    """An agent was asked for something it cannot do (unknown tool, mode or option)."""


class TaskInputError(AgentConfigError):
    """One task's inputs do not suit the agent (``ota`` given no video or audio, an unreadable
    file): that task fails (kind ``input``) and an evaluation goes on with the others. (An
    :class:`AgentConfigError` for callers that catch those around a single run.)"""


class AgentTask(BaseModel):
    """One question with its input files."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    inputs: list[InputFile] = Field(default_factory=list)
    """The input files; a repeated id gets a suffix (:func:`omnilab.inputs.unique_ids`)."""
    metadata: TaskInfo = Field(default_factory=TaskInfo)
    """What the agent must tell its model besides the question (options, answer format)."""

    @field_validator("inputs")
    @classmethod
    def _unique_ids(cls, inputs: list[InputFile]) -> list[InputFile]:
        return unique_ids(inputs)


class Budgets(BaseModel):
    """Limits of one run. Past ``max_turns`` the agent asks once more for a final answer with
    tools disabled; past ``max_tokens`` or ``max_seconds`` it stops (status ``budget``)."""

    model_config = ConfigDict(frozen=True)

    max_turns: int = Field(default=50, ge=1)
    """Model calls that may use tools (the OmniGAIA agents use 50)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Prompt plus completion tokens over every model call of the run."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Wall-clock seconds of the whole run; a call still running at the limit is cancelled."""


@dataclass
class AgentContext:
    """Everything a run needs besides the task (fields in the order of the agent contract)."""

    model: Model
    """The agent's model (role ``agent``)."""
    roles: dict[str, Model]
    """Other models by role, e.g. ``perception`` for the audio_qa/vision_qa tools."""
    tools: Sequence[str | Tool] | None
    """The tools to offer: names (:mod:`omnilab.tools.registry`), ``module:attr`` or
    :class:`~omnilab.tools.Tool` objects; ``None`` lets the agent choose its default set."""
    budgets: Budgets
    workspace: Path
    """The task's private folder: sandboxed code runs and writes here. It may not exist yet:
    what writes there first makes it (``mkdir(parents=True, exist_ok=True)``, as the code tool
    and the views do); the evaluation runner makes none, and removes it if left empty."""
    trajectory: TrajectoryWriter
    """Where every event goes; the caller opens and closes it."""
    on_event: EventHook | None = None
    """Called after each event is written (the ``ask`` live view)."""


@runtime_checkable
class Agent(Protocol):
    """A scaffold: turns a task into a trajectory."""

    name: str

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        """Solve ``task``, writing every step into ``ctx.trajectory``; return what was written."""
        ...
