"""Schema 2 next to schema 1: a file written by the previous release still reads and renders;
every model call of a schema-2 file carries its full input, even without a run session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.errors import OmnilabError
from omnilab.models.events import ModelCallEvent
from omnilab.trajectory import SCHEMA_VERSION, TrajectoryError, read_trajectory, render_text

V1 = Path(__file__).resolve().parents[1] / "data" / "trajectory_v1.jsonl"
runner = CliRunner()


def test_a_schema_1_file_still_reads() -> None:
    traj = read_trajectory(V1)
    assert traj.header.schema_version == 1 and SCHEMA_VERSION == 2
    assert traj.status == "answered" and traj.answer == "42"
    assert [m.role for m in traj.messages()] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    # Its inputs were summaries: the agent's turns are rebuilt from the conversation, the
    # perception tool's own call cannot be.
    contexts = traj.contexts()
    assert [len(c.messages) for c in contexts] == [2, 5] and not any(c.exact for c in contexts)
    assert contexts[1].reasoning == "The frame shows 42."
    assert traj.messages(reasoning=True)[-1].text.startswith("<think>\nThe frame shows 42.")


def test_a_schema_1_file_still_renders(tmp_path: Path) -> None:
    text = render_text(read_trajectory(V1))
    assert "side call scripted:perception: It shows 42." in text
    assert "[2] think: The frame shows 42." in text and "end: answered, 2 turns" in text
    copy = tmp_path / "old.jsonl"
    shutil.copy(V1, copy)
    result = runner.invoke(app, ["trace", str(copy), "--width", "200"])
    assert result.exit_code == 0, result.output
    assert "answer: 42" in result.output


def test_model_calls_carry_their_full_input_without_a_session(run_file: Path) -> None:
    # The conftest run feeds a Model's events straight into the writer (no AgentRun): no
    # context ids, so each input is stored whole, and every call can be rebuilt.
    traj = read_trajectory(run_file)
    assert traj.header.schema_version == 2
    first, side, second = traj.contexts()
    assert all(c.exact for c in (first, side, second))
    assert [m.text for m in side.messages] == ["vision", "What number?"]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool", "user"]
    assert second.messages[:2] == first.messages
    # No context ids: the conversation is the schema-1 one, as before.
    assert [m.role for m in traj.messages()][-1] == "assistant"


def test_a_call_that_refers_to_messages_the_file_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    header = {"format": "omnilab-trajectory", "schema_version": 2, "run_id": "r", "created": "x"}
    call = ModelCallEvent.model_validate(
        {
            "model": "m",
            "input": {"messages": 3, "roles": {}, "parts": {}},
            "latency_s": 0.1,
            "attempts": 1,
            "context_id": "agent-1",
        }
    ).model_dump(mode="json")
    call["sent"] = {"prefix": 3, "messages": [], "tools_same": True, "config": {}, "media": {}}
    lines = [json.dumps(header), json.dumps(call), json.dumps(call)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"line 2 is not a valid event: .*3 earlier messages"):
        read_trajectory(path)


def test_trace_prints_the_exact_input_of_a_call(run_file: Path) -> None:
    result = runner.invoke(app, ["trace", str(run_file), "--call", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["exact"] is True and data["model"] == "scripted:agent"
    assert [m["role"] for m in data["messages"]] == ["system", "user", "assistant", "tool", "user"]
    past = runner.invoke(app, ["trace", str(run_file), "--call", "9"])
    # An OmnilabError: the CLI's entry point prints it as one line.
    assert isinstance(past.exception, OmnilabError)
    assert "--call 9 is past the last" in str(past.exception)
