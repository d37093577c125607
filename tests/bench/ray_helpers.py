"""An agent for the Ray backend tests, importable by Ray's worker processes (see
test_backend_ray.py, which puts this folder on their PYTHONPATH)."""

from __future__ import annotations

import os
from pathlib import Path

from omnilab.agents import AgentContext, AgentTask, get_agent
from omnilab.trajectory import Trajectory


class DyingAgent:
    """``tir``, except that the worker process dies on task ``q1`` while ``marker`` exists
    (the marker is removed first, so the retry succeeds)."""

    name = "dying"

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        if task.id == "q1" and self.marker.exists():
            self.marker.unlink()
            os._exit(1)
        trajectory: Trajectory = await get_agent("tir").run(task, ctx)
        return trajectory
