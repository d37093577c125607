"""The run session's tool calls: one reply's calls run concurrently under the budgets, each
result recorded and sent back into its context, a terminal tool noticed
(:meth:`ToolDispatch.run_tools`). :class:`~omnilab.agents.session.AgentRun` is a
:class:`ToolDispatch`: this is the dispatch half of the session, its budgets and the gate being
set up there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Literal

from omnilab.agents.session_types import Context, ToolOutcome, ToolRound
from omnilab.agents.workers import BudgetClock, ToolGate, run_tool_calls
from omnilab.models.model import Model
from omnilab.models.types import ToolCall
from omnilab.tools.base import Tool
from omnilab.trajectory import Event, ToolResultEvent, tool_message

__all__ = ["SentAs", "ToolDispatch"]

SentAs = Literal["tool", "user"]

# The model call whose reply asked for the tools running now: a tool's own model calls (a
# perception tool's model) point at it. Copied into the tool tasks with their context.
_PARENT: ContextVar[str | None] = ContextVar("omnilab_agent_parent", default=None)


class ToolDispatch:
    """Running tool calls for a run session (what :class:`~omnilab.agents.session.AgentRun`
    sets up: the gate with its per-tool budgets, the wall clock, the models by role, the
    terminal tools, the observation cut, and the trajectory ``emit``)."""

    gate: ToolGate
    clock: BudgetClock
    models: dict[str, Model]
    terminal_tools: frozenset[str]
    max_observation_chars: int | None

    def emit(self, event: Event) -> None:
        """Record ``event`` (the session writes it to the trajectory)."""
        raise NotImplementedError

    async def run_tools(
        self,
        calls: Sequence[ToolCall],
        context: Context,
        tools: Mapping[str, Tool] | Sequence[Tool],
        *,
        sent_as: SentAs = "tool",
    ) -> ToolRound:
        """Run one reply's tool calls (concurrently, under the budgets) and send each result
        back into ``context`` as a tool message (or a user message, ``sent_as="user"``)."""
        by_name = dict(tools) if isinstance(tools, Mapping) else {t.name: t for t in tools}
        results = self.gate.admit(calls)
        runnable = [c for c, r in zip(calls, results, strict=True) if r is None]
        parent = context.last_call_id
        token = _PARENT.set(parent)  # a tool's own model calls point at the call that asked
        try:
            model = self.models.get(context.role, self.models["agent"])
            ran = iter(
                await run_tool_calls(
                    runnable,
                    by_name,
                    clock=self.clock,
                    capabilities=model.capabilities,
                    max_chars=self.max_observation_chars,
                )
            )
        finally:
            _PARENT.reset(token)
        outcomes: list[ToolOutcome] = []
        terminal: ToolOutcome | None = None
        for call, refused in zip(calls, results, strict=True):
            result, seconds = (refused, 0.0) if refused is not None else next(ran)
            result = self.gate.after(call, result)
            event = ToolResultEvent(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                result=result,
                duration_s=seconds,
                sent_as=sent_as,
                context_id=context.id,
                parent_id=parent,
            )
            self.emit(event)
            context.messages.append(tool_message(call.id, result, sent_as=sent_as))
            outcome = ToolOutcome(call, result, event)
            outcomes.append(outcome)
            ends = call.name in self.terminal_tools or result.metadata.get("terminal") is True
            if terminal is None and refused is None and result.ok and ends:
                terminal = outcome
        return ToolRound(outcomes, terminal)
