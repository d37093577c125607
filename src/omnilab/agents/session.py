"""The run session every scaffold runs in: :class:`AgentRun`.

A scaffold is its loop and its prompts; the session does the rest. It opens and closes the run
(``run_start``/``run_end``, the status, a crash guard that records the traceback and still ends
the trajectory), binds the context's models by role so every call lands in the trajectory with
its role, its context id and its parent event, runs tool calls under budgets (per tool, per turn,
the wall clock), tells terminal tools, notices exact repeats, and records the answer::

    run = AgentRun(task, ctx, agent="echo")

    async def loop() -> RunStatus:
        chat = run.context()
        run.add(chat, Message.user(task.question))
        output = await run.call("agent", chat)
        return "budget" if output is None else run.answer(output)

    return await run.execute(loop, config={"prompt": "none"})

Model calls a tool makes itself (a perception tool's model) are recorded too: each gets a
context of its own and the id of the model call whose tool call made it as its parent.
"""

from __future__ import annotations

import asyncio
import traceback
import weakref
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from omnilab.agents.answer import final_answer
from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask
from omnilab.agents.fit import fit_messages
from omnilab.agents.session_tools import _PARENT, ToolDispatch
from omnilab.agents.session_types import Context, ToolOutcome, ToolRound, writes_a_call
from omnilab.agents.view_check import vet_views
from omnilab.agents.workers import BudgetClock, ToolGate
from omnilab.models.errors import ModelError
from omnilab.models.events import ModelCallEvent
from omnilab.models.model import Model
from omnilab.models.types import (
    GenerateConfig,
    Message,
    ModelOutput,
    ToolCall,
    ToolSpec,
    Usage,
)
from omnilab.tools.base import Tool, ToolResult
from omnilab.trajectory import (
    AnswerEvent,
    ContextEdit,
    ErrorEvent,
    Event,
    MessageAdded,
    RunEnd,
    RunStart,
    RunStatus,
    StepNote,
    StepScore,
    Trajectory,
)

__all__ = ["AgentRun", "Context", "ToolOutcome", "ToolRound"]


@dataclass
class _CallScope:
    run: AgentRun
    context: Context
    event: ModelCallEvent | None = None


# Which run and context the current model call belongs to; set around ``AgentRun.call`` so the
# bound model's sink can label its event (a tool's own calls get their parent from ``_PARENT``).
_CALL: ContextVar[_CallScope | None] = ContextVar("omnilab_agent_call", default=None)


class AgentRun(ToolDispatch):
    """One run of one task (see the module docstring).

    ``tool_budgets`` caps calls per tool over the run (e.g. ``{"text_search": 10}``);
    ``calls_per_turn`` caps the calls of one reply that run (the rest get ``TOO_MANY_CALLS``);
    a call of a ``terminal_tools`` tool (or a result whose metadata says ``terminal``) that
    succeeds ends the run; the same call with the same arguments a ``repeat_notice_at``-th time
    or later gets a notice appended to its result (omnilab's addition; ``None``: never);
    ``check_call`` may refuse a call before it runs (a scaffold's argument rule): the refusal is
    its result and it uses no budget.
    """

    def __init__(
        self,
        task: AgentTask,
        ctx: AgentContext,
        *,
        agent: str,
        tool_budgets: Mapping[str, int] | None = None,
        calls_per_turn: int | None = None,
        terminal_tools: Collection[str] = (),
        max_observation_chars: int | None = None,
        repeat_notice_at: int | None = 3,
        check_call: Callable[[ToolCall], ToolResult | None] | None = None,
        branch_of: tuple[str, str] | None = None,
    ) -> None:
        self.task = task
        self.ctx = ctx
        self.agent = agent
        self.budgets = ctx.budgets
        self.gate = ToolGate(
            tool_budgets=tool_budgets,
            calls_per_turn=calls_per_turn,
            repeat_notice_at=repeat_notice_at,
            check=check_call,
        )
        """Per-tool budgets, the per-turn limit and the repeat notice."""
        self.terminal_tools = frozenset(terminal_tools)
        self.max_observation_chars = max_observation_chars
        self.branch_of = branch_of
        self.events: list[Event] = []
        self.usage = Usage()
        self.turns = 0
        self.clock = BudgetClock(ctx.budgets.max_seconds)
        self.stats: dict[str, float] = {}
        """Per-run figures the scaffold reports (e.g. ``rounds``): written into ``run_end`` and
        averaged over tasks by ``omnilab metrics``."""
        self._contexts = 0
        self._last_call_id: str | None = None
        self._last_context_id: str | None = None
        self.models: dict[str, Model] = {"agent": self._bind(ctx.model, "agent")}
        """The context's models by role, bound to this run (``agent`` plus ``ctx.roles``)."""
        for role, model in ctx.roles.items():
            self.models[role] = self._bind(model, role)

    # -- events -------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Write ``event`` to the trajectory, keep it, and show it to the live hook."""
        self.ctx.trajectory.emit(event)
        self.events.append(event)
        if self.ctx.on_event is not None:
            self.ctx.on_event(event)

    def _bind(self, model: Model, role: str) -> Model:
        # A view per run and role (Model.bound): models are shared by concurrent runs, and each
        # run's calls must go to its own trajectory. A sink the caller set still gets every event.
        # The view holds the run weakly: held strongly, the run, its views and everything they
        # reach (events, messages, the trajectory writer) formed a cycle that only the garbage
        # collector could free, about 85 objects per task walked by every young collection.
        # A call that ends after the run is gone is not recorded.
        run = weakref.ref(self)

        def sink(event: ModelCallEvent) -> None:
            me = run()
            if me is not None:
                labelled = me._label(event, role)
                me.usage = me.usage + labelled.usage
                me.emit(labelled)

        return model.bound(role=role, sink=sink)

    def _label(self, event: ModelCallEvent, role: str) -> ModelCallEvent:
        scope = _CALL.get()
        if scope is not None and scope.run is self and scope.event is None:
            scope.event = event
            event.role, event.context_id = role, scope.context.id
            event.parent_id = scope.context.last_call_id
        else:
            # A call the session did not make (a tool's own model): a context of its own.
            event.role = role
            event.context_id = self._new_context_id(f"{role}-side")
            event.parent_id = _PARENT.get()
        return event

    def _new_context_id(self, prefix: str) -> str:
        self._contexts += 1
        return f"{prefix}-{self._contexts}"

    # -- contexts -----------------------------------------------------------------------------

    def context(
        self, role: str = "agent", *, messages: Sequence[Message] = (), name: str | None = None
    ) -> Context:
        """A new conversation talking to the model of ``role``; ``messages`` are added first.

        ``name`` starts the context's id instead of the role (e.g. ``image-r2`` for a round of a
        master agent), so trace and the viewer can tell its stages and rounds apart."""
        if role not in self.models:
            raise AgentConfigError(f"no model for role {role!r}; roles: {', '.join(self.models)}")
        context = Context(id=self._new_context_id(name or role), role=role)
        for message in messages:
            self.add(context, message)
        return context

    def add(self, context: Context, message: Message) -> None:
        """Append a message no model or tool produced (prompts, notices) and record it."""
        context.messages.append(message)
        self.emit(
            MessageAdded(message=message, context_id=context.id, parent_id=context.last_call_id)
        )

    def edit(
        self,
        context: Context,
        start: int,
        end: int,
        replacement: Sequence[Message] = (),
        *,
        reason: str = "",
    ) -> None:
        """Replace ``context.messages[start:end]`` by ``replacement`` (none: purge) and record it."""
        if not 0 <= start <= end <= len(context.messages):
            raise ValueError(f"bad edit range {start}:{end} of {len(context.messages)} messages")
        context.messages[start:end] = list(replacement)
        self.emit(
            ContextEdit(
                start=start,
                end=end,
                replacement=list(replacement),
                reason=reason,
                context_id=context.id,
                parent_id=context.last_call_id,
            )
        )

    # -- model calls --------------------------------------------------------------------------

    async def call(
        self,
        model: str | Model,
        context: Context,
        *,
        tools: Sequence[Tool] = (),
        config: GenerateConfig | None = None,
        turn: bool = True,
    ) -> ModelOutput | None:
        """One call of ``model`` (a role or a model) on ``context``'s messages, bounded by the
        time budget; its reply is appended to the context. ``None`` when the time ran out.

        ``turn=False`` leaves the turn count alone (a call that is not a step of the agent).
        Raises :class:`~omnilab.models.errors.ModelError` when the model fails (the run's
        guard ends the run with status ``error``).
        """
        if isinstance(model, str) and model not in self.models:
            raise AgentConfigError(f"no model for role {model!r}; roles: {', '.join(self.models)}")
        bound = self.models[model] if isinstance(model, str) else self._bound(model, context)
        if turn:
            self.turns += 1
        specs = [t.spec for t in tools]
        self._fit(bound, context, specs, config)
        for index, vetted in sorted(vet_views(context.messages).items()):
            why = "a workspace file it showed was replaced by sandboxed code"
            self.edit(context, index, index + 1, [vetted], reason=why)
        scope = _CallScope(self, context)
        token = _CALL.set(scope)
        try:
            output = await self.clock.bound(
                bound.generate(list(context.messages), tools=specs, config=config)
            )
        except TimeoutError:
            message = f"time budget spent ({self.clock.limit:g} s) during a model call"
            self.emit(ErrorEvent(error_kind="budget", message=message, context_id=context.id))
            return None
        finally:
            _CALL.reset(token)
        context.messages.append(output.message)
        if scope.event is not None:
            context.last_call_id = self._last_call_id = scope.event.id
            self._last_context_id = context.id
        return output

    def _fit(
        self,
        model: Model,
        context: Context,
        tools: Sequence[ToolSpec],
        config: GenerateConfig | None,
    ) -> None:
        """Cut the longest messages of ``context`` so the call fits ``model``'s declared
        context window (see :mod:`omnilab.agents.fit`); each cut is recorded as an edit."""
        window = model.capabilities.context_tokens
        if window is None:
            return
        edits = fit_messages(
            context.messages,
            tools,
            window=window,
            reply_tokens=config.max_tokens if config is not None else None,
            model=model.name,
        )
        for index, message in sorted(edits.items()):
            self.edit(
                context,
                index,
                index + 1,
                [message],
                reason=f"cut to fit the model's context window ({window} tokens)",
            )

    def _bound(self, model: Model, context: Context) -> Model:
        for bound in self.models.values():
            if bound.name == model.name and bound.adapter is model.adapter:
                return bound
        return self._bind(model, context.role)

    # -- answers, scores, budgets -------------------------------------------------------------

    def answer(
        self,
        output: ModelOutput | str,
        *,
        forced: bool = False,
        tool_names: Collection[str] = (),
        verbatim: bool = False,
    ) -> Literal["answered", "no_answer"]:
        """Record the final answer of ``output`` (``<answer>`` tag, else the whole text).

        A reply that is itself a tool call (native, or written as text or JSON naming one of
        ``tool_names``) is no answer: status ``no_answer``, with the text kept; ``verbatim``
        takes its text as the answer all the same (the OmniGAIA authors' loop does).
        """
        text = output if isinstance(output, str) else output.text
        called = not isinstance(output, str) and bool(output.tool_calls)
        answer, source = final_answer(text)
        if not verbatim and (
            called or (source == "whole_text" and writes_a_call(text, tool_names))
        ):
            answer, source = None, None
        self.emit(
            AnswerEvent(
                text=text,
                answer=answer,
                forced=forced,
                source=source,
                parent_id=self._last_call_id,
                context_id=self._last_context_id,
            )
        )
        return "answered" if answer is not None else "no_answer"

    def score(self, target_id: str, value: float, *, name: str = "reward", **details: Any) -> None:
        """Record a per-step score (a process reward, a verifier's verdict) for ``target_id``."""
        self.emit(
            StepScore(
                target_id=target_id, value=value, name=name, details=details, parent_id=target_id
            )
        )

    def note(self, label: str, text: str = "", **data: Any) -> None:
        """Record what a reader should see about a step (``StepNote``): shown live and by trace."""
        self.emit(StepNote(label=label, text=text, data=data))

    def out_of_budget(self) -> bool:
        """Whether the token or time budget is spent (recorded as an ``error`` event if so)."""
        limit = self.budgets.max_tokens
        if limit is not None and self.usage.total_tokens >= limit:
            message = f"token budget spent ({self.usage.total_tokens} of {limit} tokens)"
            self.emit(ErrorEvent(error_kind="budget", message=message))
            return True
        if self.clock.expired():
            self.emit(
                ErrorEvent(
                    error_kind="budget", message=f"time budget spent ({self.clock.limit:g} s)"
                )
            )
            return True
        return False

    # -- the run ------------------------------------------------------------------------------

    async def execute(
        self, body: Callable[[], Awaitable[RunStatus]], *, config: Mapping[str, Any] | None = None
    ) -> Trajectory:
        """Open the run, ``await body()`` for its status, close the run; return the trajectory.

        A model failure ends the run with status ``error``; a cancellation or a bug records the
        traceback and a ``run_end`` before the exception goes on, so no event is lost.
        """
        parent_run, parent_event = self.branch_of or (None, None)
        self.emit(
            RunStart(
                run_id=self.ctx.trajectory.run_id,
                task_id=self.task.id,
                question=self.task.question,
                inputs=list(self.task.inputs),
                agent=self.agent,
                models={role: m.name for role, m in self.models.items()},
                config=dict(config or {}),
                parent_run_id=parent_run,
                parent_event_id=parent_event,
            )
        )
        try:
            status = await body()
        except ModelError as e:
            details = {"model": e.model, "error_kind": str(e.kind), "attempts": e.attempts}
            self.emit(ErrorEvent(error_kind="model", message=str(e), details=details))
            status = "error"
        except (asyncio.CancelledError, Exception) as e:
            cancelled = isinstance(e, asyncio.CancelledError)
            kind = "cancelled" if cancelled else "internal"
            trace = "".join(traceback.format_exception(e))
            message = "the run was stopped before it finished" if cancelled else repr(e)
            self.emit(ErrorEvent(error_kind=kind, message=message, details={"traceback": trace}))
            self._end("error")
            raise
        self._end(status)
        return self.trajectory()

    def _end(self, status: RunStatus) -> None:
        self.emit(
            RunEnd(
                status=status,
                usage=self.usage,
                wall_s=self.clock.elapsed(),
                turns=self.turns,
                stats=dict(self.stats),
            )
        )

    def trajectory(self) -> Trajectory:
        """The events so far as a :class:`~omnilab.trajectory.Trajectory`."""
        writer = self.ctx.trajectory
        return Trajectory(header=writer.header, events=list(self.events), path=writer.path)
