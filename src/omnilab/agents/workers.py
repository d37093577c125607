"""Running one turn's tool calls, the gate before them, and the run's wall-clock budget.

Every call of a turn runs, concurrently, and gets exactly one result, in the order the model
asked: an unknown tool name gets ``UNKNOWN_TOOL``, arguments that were not a JSON object get
``INVALID_ARGS`` (the model can correct itself), a call still running when the time budget ends
gets ``TIMEOUT``. Each result is then fitted to the model that reads it: media it cannot take
become a short text note, and text can be cut to a length (head and tail).

:class:`ToolGate` decides before a call runs: a call past its tool's budget gets
``TOOL_BUDGET``, a call past the per-turn limit ``TOO_MANY_CALLS``, a call the scaffold's own
``check`` refuses gets that refusal (none of these runs or counts as a use); and after:
the same call with the same arguments a third time (and after) gets a notice appended.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from omnilab.agents.base import AgentConfigError
from omnilab.agents.templates import render
from omnilab.agents.views import accepts
from omnilab.content import Content, Text
from omnilab.models.capabilities import Capabilities
from omnilab.models.types import ToolCall
from omnilab.textcut import cut_text
from omnilab.tools.base import Tool, ToolResult

__all__ = ["BudgetClock", "ToolGate", "fit_result", "run_tool_calls"]

T = TypeVar("T")


class BudgetClock:
    """The run's wall clock against an optional limit in seconds."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self._start = time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self._start

    def remaining(self) -> float | None:
        """Seconds left, ``None`` without a limit (never below zero)."""
        return None if self.limit is None else max(0.0, self.limit - self.elapsed())

    def expired(self) -> bool:
        """Whether the limit has passed."""
        left = self.remaining()
        return left is not None and left <= 0

    async def bound(self, work: Awaitable[T]) -> T:
        """``await work``, cancelled with :class:`TimeoutError` when the limit passes."""
        left = self.remaining()
        if left is None:
            return await work
        # In this task: wait_for would wrap each model call in a task of its own.
        async with asyncio.timeout(left):
            return await work


def fit_result(result: ToolResult, caps: Capabilities, max_chars: int | None) -> ToolResult:
    """``result`` as the model will be sent it: media it cannot take replaced by a note, and
    the text cut to ``max_chars`` (head and tail) when set."""
    parts: list[Content] = []
    changed = False
    for part in result.content:
        if isinstance(part, Text) or accepts(caps, part):
            parts.append(part)
        else:
            changed = True
            note = f"[{part.type} {part.name} not shown: this model does not take {part.type}]"
            parts.append(Text(text=note))
    if max_chars is not None:
        budget = max_chars
        trimmed: list[Content] = []
        for part in parts:
            if isinstance(part, Text):
                text = cut_text(part.text, max(budget, 200))
                budget = max(0, budget - len(text))
                changed = changed or text != part.text
                trimmed.append(Text(text=text))
            else:
                trimmed.append(part)
        parts = trimmed
    if not changed:
        return result
    return result.model_copy(update={"content": parts})


async def _one(call: ToolCall, tools: dict[str, Tool]) -> tuple[ToolResult, float]:
    started = time.monotonic()
    found = tools.get(call.name)
    if found is None:
        names = ", ".join(tools) or "none"
        result = ToolResult.fail(
            "UNKNOWN_TOOL", f"there is no tool named {call.name!r}; available tools: {names}"
        )
    elif call.parse_error is not None:
        result = ToolResult.fail(
            "INVALID_ARGS", f"{call.name}: arguments are not a JSON object ({call.parse_error})"
        )
    else:
        result = await found(call.arguments)
    return result, time.monotonic() - started


async def run_tool_calls(
    calls: Sequence[ToolCall],
    tools: dict[str, Tool],
    *,
    clock: BudgetClock,
    capabilities: Capabilities,
    max_chars: int | None = None,
) -> list[tuple[ToolResult, float]]:
    """Run every call concurrently; one ``(result, seconds)`` per call, in the calls' order."""
    if not calls:
        return []
    started = time.monotonic()
    tasks = [asyncio.create_task(_one(call, tools)) for call in calls]
    try:
        _done, pending = await asyncio.wait(tasks, timeout=clock.remaining())
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        raise
    for task in pending:
        task.cancel()
    outcomes: list[tuple[ToolResult, float]] = []
    for task in tasks:
        if task in pending:
            result = ToolResult.fail(
                "TIMEOUT", "the run's time budget ran out before this tool call finished"
            )
            outcomes.append((result, time.monotonic() - started))
        else:
            result, seconds = task.result()
            outcomes.append((fit_result(result, capabilities, max_chars), seconds))
    return outcomes


class ToolGate:
    """Per-tool budgets, a per-turn call limit and the repeat notice of one run."""

    def __init__(
        self,
        *,
        tool_budgets: Mapping[str, int] | None = None,
        calls_per_turn: int | None = None,
        repeat_notice_at: int | None = 3,
        check: Callable[[ToolCall], ToolResult | None] | None = None,
    ) -> None:
        if calls_per_turn is not None and calls_per_turn < 1:
            raise AgentConfigError(f"calls_per_turn must be at least 1 (got {calls_per_turn})")
        self.tool_budgets = dict(tool_budgets or {})
        self.calls_per_turn = calls_per_turn
        self.repeat_notice_at = repeat_notice_at
        """The repeat count that gets the notice (omnilab's addition); ``None``: never."""
        self.check = check
        """A scaffold's rule on arguments (e.g. one query per call): its refusal is sent back
        instead of running the call, and the call does not count against the tool's budget."""
        self.uses: dict[str, int] = {}
        """Calls run so far, by tool name (what ``tool_budgets`` counts)."""
        self._repeats: dict[str, int] = {}

    def admit(self, calls: Sequence[ToolCall]) -> list[ToolResult | None]:
        """For each call of one reply: ``None`` if it may run (counted as a use), else the
        error result it gets instead."""
        out: list[ToolResult | None] = []
        for index, call in enumerate(calls):
            refused = self._refusal(call, index)
            if refused is None:
                self.uses[call.name] = self.uses.get(call.name, 0) + 1
            out.append(refused)
        return out

    def _refusal(self, call: ToolCall, index: int) -> ToolResult | None:
        if self.calls_per_turn is not None and index >= self.calls_per_turn:
            n = self.calls_per_turn
            return ToolResult.fail(
                "TOO_MANY_CALLS",
                f"only {n} tool call{'s' if n > 1 else ''} per turn; this call was not run "
                "(make it in a later turn)",
            )
        if self.check is not None:
            refused = self.check(call)
            if refused is not None:
                return refused
        limit = self.tool_budgets.get(call.name)
        if limit is not None and self.uses.get(call.name, 0) >= limit:
            return ToolResult.fail(
                "TOOL_BUDGET",
                f"{call.name} may be called at most {limit} times per task and its budget is "
                "spent; use another tool or give your final answer",
            )
        return None

    def after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """``result`` with the repeat notice appended when this exact call came often enough."""
        key = call.name + json.dumps(call.arguments, sort_keys=True, default=str)
        count = self._repeats.get(key, 0) + 1
        self._repeats[key] = count
        if self.repeat_notice_at is None or count < self.repeat_notice_at:
            return result
        notice = render("notice_repeat", tool=call.name, count=count)
        if result.error is not None:
            error = result.error.model_copy(update={"message": f"{result.error.message}\n{notice}"})
            return result.model_copy(update={"error": error})
        return result.model_copy(update={"content": [*result.content, Text(text=notice)]})
