"""Branching a run without touching the scaffold: replay a prefix of replies, then go live.

Tree exploration and OmniDPO both need "the same run up to step n, then something new". Any
scaffold gets there when its agent model is a :func:`replay_model`: the first calls return the
recorded replies of the prefix (marked ``cached``: nothing is billed), the next ``live`` calls go
to the real model, and the call after those is refused with :data:`PAUSE_MARK` in its error, so
the run ends there (status ``error``) with the new step and its tool observations recorded. A
step is one call of the agent's model (role ``agent``); tools run again on replay, so the
observations of the prefix are recomputed (the same for deterministic tools).

Each branch is written by a :class:`BranchWriter`, whose ``run_start`` carries the parent run
and the event after which the branch diverged (trajectory schema 2's branch pointers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omnilab.agents.base import Agent, AgentContext, AgentTask
from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.events import ModelCallEvent
from omnilab.models.model import Model
from omnilab.models.retry import RetryPolicy
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec
from omnilab.trajectory import (
    Event,
    RunEnd,
    RunStart,
    Trajectory,
    TrajectoryError,
    TrajectoryWriter,
    read_trajectory,
)

__all__ = [
    "PAUSE_MARK",
    "BranchStep",
    "BranchWriter",
    "Replay",
    "ReplayAdapter",
    "agent_calls",
    "branch_step",
    "finished_trajectory",
    "replay_model",
    "run_branch",
]

PAUSE_MARK = "branch paused after its new step"
"""In the error of the call a branch refused: tells a paused branch from a failed one."""

# Longer than any real call with its retries: the real model keeps its own timeout.
_OUTER_TIMEOUT_S = 86_400.0


@dataclass
class Replay:
    """What one branch replays and how far it goes live."""

    prefix: Sequence[ModelOutput]
    """Replies returned, in order, for the first calls of the agent's model."""
    live: int | None = 1
    """Calls made to the real model after the prefix; ``None``: no limit (run to the end)."""
    guidance: str | None = None
    """Appended as a user message to the first live call only (hindsight guidance); it is not
    part of the recorded input of that call."""
    calls: int = field(default=0, init=False)


class ReplayAdapter:
    """A provider adapter over a real :class:`Model` that plays a :class:`Replay`."""

    def __init__(self, real: Model, replay: Replay) -> None:
        self.real = real
        self.replay = replay
        self.capabilities = real.capabilities
        self.endpoint = f"replay:{real.adapter.endpoint}"
        self.secrets = tuple(real.adapter.secrets)

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        replay = self.replay
        index = replay.calls
        replay.calls += 1
        if index < len(replay.prefix):
            return replay.prefix[index].model_copy(update={"cached": True, "latency_s": 0.0})
        live_index = index - len(replay.prefix)
        if replay.live is not None and live_index >= replay.live:
            raise ProviderError(ErrorKind.EXHAUSTED, f"{PAUSE_MARK} (step {index + 1})")
        sent = list(messages)
        if live_index == 0 and replay.guidance:
            sent.append(Message.user(replay.guidance))
        return await self.real.generate(sent, tools=tools, config=config)


def replay_model(real: Model, replay: Replay) -> Model:
    """A model that plays ``replay`` over ``real`` (same name and capabilities, no retries of
    its own: the real model retries its calls)."""
    return Model(
        ReplayAdapter(real, replay),
        name=real.name,
        retry=RetryPolicy(max_attempts=1),
        timeout_s=_OUTER_TIMEOUT_S,
        concurrency=real.concurrency,
    )


class BranchWriter(TrajectoryWriter):
    """A writer over another whose ``run_start`` points at the run and event it branched from,
    whose ``run_end`` carries ``end_stats`` too, and which calls ``after`` with each event it
    wrote (to add events of its own after one)."""

    # Delegates to ``inner`` rather than opening a file: the same wrapper serves a branch's new
    # file and the task's trajectory, which the runner opened and closes.
    def __init__(
        self,
        inner: TrajectoryWriter,
        *,
        parent_run_id: str | None,
        parent_event_id: str | None,
        after: Callable[[Event], Sequence[Event]] | None = None,
        end_stats: Mapping[str, float] | None = None,
    ) -> None:
        self.inner = inner
        self.path = inner.path
        self.durable = inner.durable
        self.run_id = inner.run_id
        self.header = inner.header
        self.parent_run_id = parent_run_id
        self.parent_event_id = parent_event_id
        self.after = after
        self.end_stats = dict(end_stats or {})

    def emit(self, event: Event) -> None:
        if isinstance(event, RunStart) and self.parent_run_id is not None:
            # Set on the event itself: the session returns the same objects it wrote.
            event.parent_run_id = self.parent_run_id
            event.parent_event_id = self.parent_event_id
        if isinstance(event, RunEnd):
            event.stats.update(self.end_stats)
        self.inner.emit(event)
        for extra in self.after(event) if self.after is not None else ():
            self.inner.emit(extra)

    @property
    def closed(self) -> bool:
        return self.inner.closed

    def close(self, *, sync: bool = True) -> None:
        self.inner.close(sync=sync)


async def run_branch(
    agent: Agent,
    task: AgentTask,
    ctx: AgentContext,
    *,
    real: Model,
    replay: Replay,
    path: Path,
    parent: tuple[str | None, str | None] = (None, None),
    workspace: Path | None = None,
) -> Trajectory:
    """Run ``agent`` on ``task`` with its agent model replaced by ``replay`` over ``real``,
    writing to ``path`` (``run_start`` pointing at ``parent``: run id and event id)."""
    writer = BranchWriter(
        TrajectoryWriter(path), parent_run_id=parent[0], parent_event_id=parent[1]
    )
    folder = workspace or ctx.workspace
    folder.mkdir(parents=True, exist_ok=True)
    branch_ctx = AgentContext(
        model=replay_model(real, replay),
        roles=dict(ctx.roles),
        tools=ctx.tools,
        budgets=ctx.budgets,
        workspace=folder,
        trajectory=writer,
        on_event=None,
    )
    try:
        await agent.run(task, branch_ctx)
    finally:
        writer.close()
    return read_trajectory(path)


def agent_calls(trajectory: Trajectory) -> list[ModelCallEvent]:
    """The steps of a run: the calls of its agent model (role ``agent``), in order."""
    return [c for c in trajectory.model_calls if c.role in ("agent", None)]


@dataclass(frozen=True)
class BranchStep:
    """What a branch added after its prefix of ``n`` replies."""

    trajectory: Trajectory
    call: ModelCallEvent | None
    """The new step's model call (``None`` when the run ended before making it)."""
    paused: bool
    """The run stopped after the new step (it would have gone on)."""

    @property
    def reply(self) -> ModelOutput | None:
        """The new step's reply."""
        return self.call.output if self.call is not None else None

    @property
    def finished(self) -> bool:
        """The run ended by itself after the new step (an answer, a budget, an error)."""
        return self.call is not None and self.call.output is not None and not self.paused


def branch_step(trajectory: Trajectory, n: int) -> BranchStep:
    """The new step of a branch that replayed ``n`` replies."""
    calls = agent_calls(trajectory)
    paused = any(c.error is not None and PAUSE_MARK in c.error for c in calls)
    call = calls[n] if len(calls) > n else None
    if call is not None and call.output is None:
        call = None  # the live call itself failed
    return BranchStep(trajectory, call, paused)


def finished_trajectory(path: Path) -> Trajectory | None:
    """The trajectory at ``path`` when a previous process finished writing it, else ``None``
    (missing, cut short, unreadable): a resumed exploration reuses only whole branches."""
    if not path.is_file():
        return None
    try:
        trajectory = read_trajectory(path)
    except TrajectoryError:
        return None
    return trajectory if trajectory.run_end is not None else None
