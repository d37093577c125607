"""A complete run written through the real writer: every event kind, a model sink, a side call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from omnilab.content import Image, Text
from omnilab.inputs import InputFile
from omnilab.models import Message, Usage
from omnilab.models.providers.scripted import scripted_model, text, tool_call
from omnilab.tools import ToolResult
from omnilab.trajectory import (
    AnswerEvent,
    ErrorEvent,
    MessageAdded,
    RunEnd,
    RunStart,
    ToolResultEvent,
    TrajectoryWriter,
    tool_message,
)

QUESTION = "What number is shown in <video_1>?"
READ_ARGS = {"video_id": "video_1", "t_start": 0, "t_end": 2}


def write_run(path: Path, *, finish: bool = True) -> list[object]:
    """Write a two-turn run to ``path``; returns the events in the order they were emitted."""
    emitted: list[object] = []

    with TrajectoryWriter(path, run_id="run-1") as writer:

        def emit(event: object) -> None:
            emitted.append(event)
            writer.emit(event)  # type: ignore[arg-type]

        agent = scripted_model(
            [
                tool_call(
                    "read_video",
                    READ_ARGS,
                    text="Let me look.",
                    usage=Usage(prompt_tokens=10, completion_tokens=5),
                ),
                text(
                    "<answer>42</answer>",
                    reasoning="The frame shows 42.",
                    usage=Usage(prompt_tokens=30, completion_tokens=4),
                ),
            ],
            name="scripted:agent",
            sink=emit,
        )
        perception = scripted_model(
            [text("It shows 42.", usage=Usage(prompt_tokens=7, completion_tokens=3))],
            name="scripted:perception",
            sink=emit,
        )
        emit(
            RunStart(
                run_id=writer.run_id,
                task_id="task-1",
                question=QUESTION,
                inputs=[
                    InputFile(id="video_1", kind="video", path=Path("/data/v.mp4"), given="v.mp4")
                ],
                agent="tir",
                models={"agent": agent.name, "perception": perception.name},
                config={"max_turns": 5},
            )
        )
        convo = [Message.system("You are an omni-modal assistant."), Message.user(QUESTION)]
        for m in convo:
            emit(MessageAdded(message=m))
        first = asyncio.run(agent.generate(convo))
        convo.append(first.message)
        call = first.tool_calls[0]
        # A perception tool's own model call lands on the same sink mid-turn.
        asyncio.run(perception.generate([Message.system("vision"), Message.user("What number?")]))
        result = ToolResult(
            content=[Text(text="t=0.0 s"), Image(path=Path("/cache/f0.jpg")), Text(text="t=1.0 s")],
            metadata={"frames": 2},
        )
        emit(
            ToolResultEvent(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                result=result,
                duration_s=0.25,
            )
        )
        convo.append(tool_message(call.id, result))
        notice = Message.user("Step 2 of 5.")
        emit(MessageAdded(message=notice))
        convo.append(notice)
        if not finish:
            return emitted
        second = asyncio.run(agent.generate(convo))
        emit(AnswerEvent(text=second.text, answer="42"))
        emit(ErrorEvent(error_kind="judge", message="judge unavailable, exact match only"))
        emit(RunEnd(status="answered", usage=agent.usage + perception.usage, wall_s=1.5, turns=2))
    return emitted


@pytest.fixture()
def make_run() -> Callable[..., list[object]]:
    """:func:`write_run`, for tests that need their own file or an unfinished run."""
    return write_run


@pytest.fixture()
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "task-1.jsonl"
    write_run(path)
    return path
