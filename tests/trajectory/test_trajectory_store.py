"""Writing and reading trajectories: round trip, views, damaged and foreign files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from omnilab.content import Text
from omnilab.models import Message, ModelCallEvent, Usage
from omnilab.tools import ToolResult
from omnilab.trajectory import (
    SCHEMA_VERSION,
    AnswerEvent,
    ErrorEvent,
    EventAdapter,
    MessageAdded,
    ModelCall,
    RunEnd,
    RunStart,
    ToolResultEvent,
    TrajectoryError,
    TrajectoryWriter,
    read_trajectory,
    tool_message,
)

QUESTION = "What number is shown in <video_1>?"
READ_ARGS = {"video_id": "video_1", "t_start": 0, "t_end": 2}
WriteRun = Callable[..., list[object]]


def test_every_event_kind_round_trips(tmp_path: Path, make_run: WriteRun) -> None:
    path = tmp_path / "run.jsonl"
    emitted = make_run(path)
    traj = read_trajectory(path)
    assert [e.model_dump() for e in traj.events] == [e.model_dump() for e in emitted]  # type: ignore[attr-defined]
    kinds = {e.kind for e in traj.events}
    assert kinds == {
        "run_start",
        "message",
        "model_call",
        "tool_result",
        "answer",
        "error",
        "run_end",
    }
    assert ModelCall is ModelCallEvent
    assert all(e.id and e.timestamp > 0 for e in traj.events)
    assert traj.truncated is False and traj.warnings == []


def test_file_is_a_header_then_one_event_per_line(run_file: Path) -> None:
    lines = run_file.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "omnilab-trajectory"
    assert header["schema_version"] == SCHEMA_VERSION
    assert header["run_id"] == "run-1"
    assert header["created"].endswith("+00:00")
    assert [json.loads(line)["kind"] for line in lines[1:4]] == ["run_start", "message", "message"]
    assert read_trajectory(run_file).header.run_id == "run-1"


def test_views_answer_status_usage_and_tool_calls(run_file: Path) -> None:
    traj = read_trajectory(run_file)
    assert traj.answer == "42"
    assert traj.status == "answered"
    # RunEnd's totals include the perception model's call.
    assert traj.usage == Usage(prompt_tokens=47, completion_tokens=12)
    assert [(c.name, c.arguments) for c in traj.tool_calls] == [("read_video", READ_ARGS)]
    (result,) = traj.tool_results
    assert result.name == "read_video" and result.duration_s == 0.25
    assert result.call_id == traj.tool_calls[0].id
    assert [m.model for m in traj.model_calls] == [
        "scripted:agent",
        "scripted:perception",
        "scripted:agent",
    ]
    start = traj.run_start
    assert start is not None and start.question == QUESTION and start.inputs[0].id == "video_1"


def test_messages_rebuild_the_agent_conversation_without_side_calls(run_file: Path) -> None:
    traj = read_trajectory(run_file)
    messages = traj.messages()
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assistant = messages[2]
    assert assistant.text == "Let me look." and assistant.tool_calls[0].name == "read_video"
    tool = messages[3]
    assert tool == tool_message(assistant.tool_calls[0].id, traj.tool_results[0].result)
    assert messages[4].text == "Step 2 of 5."
    assert messages[5].text == "<answer>42</answer>"
    assert all("It shows 42." not in m.text for m in messages)
    assert traj.messages(model="scripted:other") == messages[:2] + messages[3:5]


def test_tool_message_sends_errors_as_their_line() -> None:
    failed = ToolResult.fail("TS_OOB", "t_end 9.0 s is past the end of v.mp4 (duration 4.0 s)")
    message = tool_message("c1", failed)
    assert message == Message(
        role="tool",
        content=[
            Text(text="Error [TS_OOB]: t_end 9.0 s is past the end of v.mp4 (duration 4.0 s)")
        ],
        tool_call_id="c1",
    )
    assert tool_message("c2", ToolResult()).text == "(no output)"


def test_unfinished_run_is_incomplete_with_usage_summed(tmp_path: Path, make_run: WriteRun) -> None:
    path = tmp_path / "cut.jsonl"
    make_run(path, finish=False)
    traj = read_trajectory(path)
    assert traj.status == "incomplete"
    assert traj.answer is None and traj.run_end is None
    assert traj.usage == Usage(prompt_tokens=17, completion_tokens=8)


def test_each_emit_is_on_disk_before_close(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = TrajectoryWriter(path)
    writer.emit(MessageAdded(message=Message.system("hi")))
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    writer(AnswerEvent(text="<answer>x</answer>", answer="x"))  # usable as a sink
    assert read_trajectory(path).answer == "x"
    writer.close()
    assert writer.closed
    with pytest.raises(ValueError, match="closed"):
        writer.emit(AnswerEvent(text="late"))


def test_error_event_accepts_kind_as_the_error_kind() -> None:
    event = ErrorEvent(kind="model", message="gave up after 4 attempts")  # type: ignore[arg-type]
    assert event.kind == "error" and event.error_kind == "model"
    again = EventAdapter.validate_json(EventAdapter.dump_json(event))
    assert again == event


def test_truncated_last_line_is_skipped_and_reported(run_file: Path) -> None:
    complete = read_trajectory(run_file)
    with run_file.open("a", encoding="utf-8") as f:
        f.write('{"kind": "answer", "text": "<answer>4')
    traj = read_trajectory(run_file)
    assert traj.truncated is True
    assert len(traj.events) == len(complete.events)
    (warning,) = traj.warnings
    assert warning.startswith(f"line {len(complete.events) + 2} is incomplete")


def test_a_damaged_line_before_the_last_is_an_error(run_file: Path) -> None:
    lines = run_file.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3][: len(lines[3]) // 2]
    run_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"line 4 is not a valid event"):
        read_trajectory(run_file)


def test_unknown_schema_versions_are_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    header = {"format": "omnilab-trajectory", "schema_version": 99, "run_id": "r", "created": "x"}
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryError) as info:
        read_trajectory(path)
    message = str(info.value)
    assert "schema version 99" in message and f"reads versions 1, {SCHEMA_VERSION}" in message
    assert "upgrade omnilab" in message
    header["schema_version"] = 0
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"version 0, .* not supported"):
        read_trajectory(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read trajectory"),
        ("", "is empty"),
        ('{"hello": 1}\n', "not an omnilab trajectory"),
        ("not json\n", "not an omnilab trajectory"),
    ],
)
def test_foreign_files_are_one_line_errors(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "x.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(TrajectoryError, match=message) as info:
        read_trajectory(path)
    assert "\n" not in str(info.value)


def test_each_event_kind_validates_from_its_json() -> None:
    events = [
        RunStart(run_id="r", question="q", agent="tir"),
        MessageAdded(message=Message.user("hi")),
        ToolResultEvent(call_id="c", name="t", result=ToolResult.fail("X", "y")),
        AnswerEvent(text="t", answer=None, forced=True),
        ErrorEvent(error_kind="internal", message="m", details={"traceback": "..."}),
        RunEnd(status="budget", wall_s=3.0, turns=10),
    ]
    for event in events:
        line = EventAdapter.dump_json(event)
        assert type(EventAdapter.validate_json(line)) is type(event)
        assert EventAdapter.validate_json(line) == event


@pytest.mark.parametrize(("durable", "syncs_before_close"), [(False, 0), (True, 3)])
def test_fsync_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool, syncs_before_close: int
) -> None:
    """Lines always reach the OS at once; fsync is per line only when durable, always on close."""
    from omnilab.trajectory import store

    synced: list[int] = []
    monkeypatch.setattr(store.os, "fsync", lambda fd: synced.append(fd))
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, durable=durable)
    for i in range(2):
        writer.emit(ErrorEvent(error_kind="test", message=f"e{i}"))
    assert len(path.read_text().splitlines()) == 3  # header + 2 events, before any close
    assert len(synced) == syncs_before_close
    writer.close()
    assert len(synced) == syncs_before_close + 1


def test_close_without_sync_leaves_the_sync_to_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.trajectory import store

    synced: list[int] = []
    monkeypatch.setattr(store.os, "fsync", lambda fd: synced.append(fd))
    writer = TrajectoryWriter(tmp_path / "t.jsonl")
    writer.emit(ErrorEvent(error_kind="test", message="e"))
    writer.close(sync=False)
    assert synced == [] and writer.closed
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 2  # all there, unsynced
