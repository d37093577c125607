"""Trajectories: the event stream of a run, written as versioned JSONL after every step.

An agent emits :data:`Event` s into a :class:`TrajectoryWriter` (also usable as a model's event
sink); :func:`read_trajectory` loads a file back (schema 1 or 2), even one cut off by a crash,
into a :class:`Trajectory` with the answer, status, usage, tool calls, the exact input of every
model call (:meth:`Trajectory.contexts`) and each context's conversation; :func:`render_text`
prints it compactly (``omnilab trace FILE``). The format is described in docs/trajectories.md.
"""

from __future__ import annotations

from omnilab.trajectory.contexts import CallContext
from omnilab.trajectory.events import (
    SCHEMA_VERSION,
    AnswerEvent,
    ContextEdit,
    ErrorEvent,
    Event,
    EventAdapter,
    MessageAdded,
    ModelCall,
    RunEnd,
    RunStart,
    RunStatus,
    StepNote,
    StepScore,
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
    "CallContext",
    "ContextEdit",
    "ErrorEvent",
    "Event",
    "EventAdapter",
    "MessageAdded",
    "ModelCall",
    "RunEnd",
    "RunStart",
    "RunStatus",
    "StepNote",
    "StepScore",
    "ToolResultEvent",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryHeader",
    "TrajectoryWriter",
    "read_trajectory",
    "render_text",
    "tool_message",
]
