"""Agent scaffolds: the :class:`Agent` protocol, its task and context, and agents by name.

``get_agent("tir", variant="omniatlas", mode="active")`` returns the OmniGAIA tool-integrated
reasoning agent; ``await agent.run(task, ctx)`` writes the run into ``ctx.trajectory`` and
returns the :class:`~omnilab.trajectory.Trajectory`. Importing this package loads no agent.
"""

from __future__ import annotations

from omnilab.agents.answer import extract_answer, final_answer
from omnilab.agents.base import (
    Agent,
    AgentConfigError,
    AgentContext,
    AgentTask,
    Budgets,
    EventHook,
)
from omnilab.agents.registry import agent_names, get_agent, register_agent
from omnilab.agents.task_info import TaskInfo

__all__ = [
    "Agent",
    "AgentConfigError",
    "AgentContext",
    "AgentTask",
    "Budgets",
    "EventHook",
    "TaskInfo",
    "agent_names",
    "extract_answer",
    "final_answer",
    "get_agent",
    "register_agent",
]
