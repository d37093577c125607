"""Helpers of the tree-exploration and OmniDPO tests: a small dataset written on the spot, a
test tool, scripted models whose adapters count the calls."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from omnilab.models.model import Model
from omnilab.models.providers.scripted import OutputStep, ScriptedAdapter, ScriptStep
from omnilab.models.retry import RetryPolicy
from omnilab.models.types import Message, ModelOutput, ToolCall
from omnilab.tools.base import Tool, tool
from omnilab.tools.registry import TOOLS, register_tool

TOOL = "explore_lookup"


@tool(name=TOOL)
def lookup(key: str) -> str:
    """Look a key up in a tiny table.

    Args:
        key: the key to look up.
    """
    return {"a": "a is 40", "b": "b is 7"}.get(key, f"no entry for {key}")


def register() -> Iterator[Tool]:
    """Register the test tool for one test (a fixture body)."""
    register_tool(TOOL, lookup)
    yield lookup
    TOOLS.unregister(TOOL)


def dataset(folder: Path, items: Sequence[dict[str, object]] | None = None) -> Path:
    """A ``jsonl`` dataset file of plain questions."""
    rows = items or [{"id": "t1", "question": "What is a plus 2?", "answer": "42"}]
    path = folder / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def scripted(steps: Sequence[ScriptStep], name: str) -> tuple[Model, ScriptedAdapter]:
    """A scripted model that does not retry, and its adapter (``requests``: every call)."""
    adapter = ScriptedAdapter(steps, name=name)
    return Model(adapter, name=name, retry=RetryPolicy(max_attempts=1, backoff_s=0.0)), adapter


def call(key: str, thought: str = "Let me look it up.") -> OutputStep:
    """A reply that calls the test tool."""
    message = Message.assistant(thought, tool_calls=[ToolCall(name=TOOL, arguments={"key": key})])
    return OutputStep(output=ModelOutput(message=message, finish_reason="tool_calls"))


def answer(value: str) -> OutputStep:
    """A final answer."""
    return OutputStep(output=ModelOutput.from_text(f"So it is <answer>{value}</answer>"))


def verdicts(*marks: tuple[bool, float]) -> OutputStep:
    """The verifier's JSON reply: (keep, score) per candidate, in order."""
    listed = [
        {"candidate": i, "keep": keep, "score": score, "reason": f"because {i}"}
        for i, (keep, score) in enumerate(marks, 1)
    ]
    return OutputStep(output=ModelOutput.from_text(json.dumps({"verdicts": listed})))
