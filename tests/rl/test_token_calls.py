"""Rows for a trainer read a trajectory's token traces without rebuilding every call's input:
:func:`read_token_calls` gives the same ``(id, trace)`` pairs as ``read_trajectory``'s model
calls, skips calls without a trace and a cut-off last line, and refuses a damaged line before
the last as ``read_trajectory`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnilab.models.events import ModelCallEvent, summarize_input
from omnilab.models.token_trace import TokenTrace
from omnilab.models.types import Message, ModelOutput
from omnilab.rl.sequences import linked, sequences
from omnilab.trajectory.store import TrajectoryError, TrajectoryWriter, read_trajectory
from omnilab.trajectory.token_calls import read_token_calls


def _call(trace: TokenTrace | None, text: str) -> ModelCallEvent:
    return ModelCallEvent(
        model="vllm:policy",
        input=summarize_input([Message.user(text)], []),
        output=ModelOutput(message=Message.assistant(text), tokens=trace),
        latency_s=0.0,
        attempts=1,
    )


def _written(path: Path) -> list[ModelCallEvent]:
    first = TokenTrace.build("t", [1, 2], [3, 4], [-0.3, -0.4])
    second = TokenTrace.build("t", [1, 2, 3, 4, 9], [5], [-0.5], base_len=4)
    # A message quoting the markers the reader looks for does not fool it.
    calls = [_call(first, 'a "model_call" with "tokens"'), _call(None, "plain"), _call(second, "b")]
    with TrajectoryWriter(path) as writer:
        for call in calls:
            writer.emit(call)
    return calls


def test_the_same_traces_as_read_trajectory(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    calls = _written(path)
    full = [
        (c.id, c.output.tokens)
        for c in read_trajectory(path).model_calls
        if c.output and c.output.tokens
    ]
    assert read_token_calls(path) == full and len(full) == 2
    assert [c[0] for c in full] == [calls[0].id, calls[2].id]
    (seq,) = linked(read_token_calls(path))
    (again,) = sequences(read_trajectory(path).model_calls)
    assert seq == again and seq.ids == [1, 2, 3, 4, 9, 5] and seq.response_mask == [1, 1, 0, 1]


def test_a_cut_off_last_line_is_skipped_a_damaged_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _written(path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # the run stopped mid-line
    assert len(read_token_calls(path)) == 1
    path.write_bytes(b"".join([*lines[:1], lines[1][:-30] + b"\n", *lines[2:]]))
    with pytest.raises(TrajectoryError, match="line 2 is not a valid event"):
        read_token_calls(path)
