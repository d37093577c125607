"""The token traces of a rollout run kept as the scaffold returns them, so
:func:`~omnilab.rl.rollout` need not read every trajectory file back to make its rows.

A scaffold returns the :class:`~omnilab.trajectory.Trajectory` it wrote (its events, in the
order they were written); :class:`RecordingAgent` keeps each one's ``(call id, trace)`` pairs,
the same pairs :func:`~omnilab.trajectory.token_calls.read_token_calls` reads from the file.
What it did not see (a run that crashed, a task run in another process by a Ray backend, a
result already in the folder) is read from the file as before.
"""

from __future__ import annotations

import os

from omnilab.agents.base import Agent, AgentContext, AgentTask
from omnilab.models.token_trace import TokenTrace
from omnilab.trajectory import Trajectory

__all__ = ["RecordingAgent"]

Calls = list[tuple[str, TokenTrace]]


class RecordingAgent:
    """``agent`` (any scaffold), keeping the token traces of every trajectory it returns by
    the trajectory's path until :meth:`take` hands them over."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.name = agent.name
        self._found: dict[str, Calls] = {}
        # A backend that ships the executor to other processes ships this too: a copy there
        # keeps nothing (no one would take it).
        self._pid = os.getpid()

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        """What ``agent`` returns, its token traces kept."""
        trajectory = await self.agent.run(task, ctx)
        if trajectory.path is not None and os.getpid() == self._pid:
            self._found[str(trajectory.path)] = [
                (call.id, call.output.tokens)
                for call in trajectory.model_calls
                if call.output is not None and call.output.tokens is not None
            ]
        return trajectory

    def take(self, path: str) -> Calls | None:
        """The traces of the trajectory at ``path`` (``None`` when none was recorded)."""
        return self._found.pop(path, None)
