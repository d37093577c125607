"""Trajectories: the event stream of a run, written as versioned JSONL after every step.

An agent emits :data:`Event` s into a :class:`TrajectoryWriter` (also usable as a model's event
sink); :func:`read_trajectory` loads a file back, even one cut off by a crash, into a
:class:`Trajectory` with the answer, status, usage, tool calls and the rebuilt conversation;
:func:`render_text` prints it compactly (``omnilab trace FILE``).
"""

from __future__ import annotations

from omnilab.trajectory.events import (
    SCHEMA_VERSION,
    AnswerEvent,
    ErrorEvent,
    Event,
    EventAdapter,
    MessageAdded,
    ModelCall,
    RunEnd,
    RunStart,
    RunStatus,
    ToolResultEvent,
    tool_message,
)
from omnilab.trajectory.render import render_text
from omnilab.trajectory.store import (
    Trajectory,
    TrajectoryError,
    TrajectoryHeader,
    TrajectoryWriter,
    read_trajectory,
)

__all__ = [
    "SCHEMA_VERSION",
    "AnswerEvent",
    "ErrorEvent",
    "Event",
    "EventAdapter",
    "MessageAdded",
    "ModelCall",
    "RunEnd",
    "RunStart",
    "RunStatus",
    "ToolResultEvent",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryHeader",
    "TrajectoryWriter",
    "read_trajectory",
    "render_text",
    "tool_message",
]
