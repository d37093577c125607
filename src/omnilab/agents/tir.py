"""``tir``: tool-integrated reasoning, the OmniGAIA base agent and its OmniAtlas variant (§4.1).

Each turn the model thinks, calls tools or answers; every tool call of a turn runs (in
parallel) and its result goes back as a tool message. The final answer is the last
``<answer>...</answer>`` (else the whole final message, recorded as a fallback). After
``max_turns`` the model gets the authors' forced-final prompt once, with tools disabled.

``variant`` picks the B.2 system prompt (``base`` or ``omniatlas``); ``mode`` picks how the
media reach the model (:mod:`omnilab.agents.views`). Everything goes to the trajectory as it
happens: the added messages, each model call (the model writes those itself through its sink),
each tool result, the answer and the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import traceback
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnilab.agents.answer import final_answer, looks_like_tool_call
from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask
from omnilab.agents.templates import render
from omnilab.agents.toolset import ToolEnv, build_tools, check_tool_names, default_tools
from omnilab.agents.views import MODES, Mode, check_mode, default_mode, first_message_parts
from omnilab.agents.workers import BudgetClock, run_tool_calls
from omnilab.inputs import InputSet
from omnilab.models.errors import ModelError
from omnilab.models.events import ModelCallEvent
from omnilab.models.model import Model
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage
from omnilab.tools.base import Tool
from omnilab.tools.registry import tool_name
from omnilab.trajectory import (
    AnswerEvent,
    ErrorEvent,
    Event,
    MessageAdded,
    RunEnd,
    RunStart,
    RunStatus,
    ToolResultEvent,
    Trajectory,
    tool_message,
)

__all__ = ["TirAgent", "TirOptions", "Variant"]

Variant = Literal["base", "omniatlas"]
_SYSTEM: dict[Variant, str] = {"base": "omnigaia_base", "omniatlas": "omnigaia_omniatlas"}
_FORCED: dict[Variant, str] = {"base": "forced_final_base", "omniatlas": "forced_final_omniatlas"}


class TirOptions(BaseModel):
    """Options of the ``tir`` agent (``get_agent("tir", **options)``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    variant: Variant | None = None
    """System prompt: ``base`` or ``omniatlas``; default ``omniatlas`` in modes that offer the
    read_* tools (active, evidence), else ``base``."""
    mode: Mode | None = None
    """How media reach the model; default from the model's capability flags."""
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    """Sampling settings of every call (``max_tokens`` caps each reply)."""
    max_observation_chars: int | None = Field(default=None, ge=200)
    """Cut the text of each tool result to this many characters (head and tail) before the
    model sees it; for small context windows. ``None`` keeps results whole."""


class TirAgent:
    """The OmniGAIA tool-integrated reasoning agent (see the module docstring)."""

    name = "tir"
    options_model = TirOptions

    def __init__(self, **options: object) -> None:
        try:
            self.options = TirOptions.model_validate(options)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "options"
            raise AgentConfigError(
                f"bad tir option {where}: {first['msg']} (modes: {', '.join(MODES)}; "
                "variants: base, omniatlas)"
            ) from None

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        """Solve ``task``; every step is written to ``ctx.trajectory`` as it happens.

        Raises :class:`AgentConfigError` (before anything is written) when the mode does not fit
        the model or a tool cannot be set up; model failures end the run with status ``error``.
        """
        return await _Run(self.options, task, ctx).execute()


class _Run:
    """One run's state: the events so far, token totals, turns and the clock."""

    def __init__(self, options: TirOptions, task: AgentTask, ctx: AgentContext) -> None:
        self.options = options
        self.task = task
        self.ctx = ctx
        self.events: list[Event] = []
        self.usage = Usage()
        self.turns = 0
        self.clock = BudgetClock(ctx.budgets.max_seconds)

    def emit(self, event: Event) -> None:
        self.ctx.trajectory.emit(event)
        self.events.append(event)
        if self.ctx.on_event is not None:
            self.ctx.on_event(event)

    def _on_model_call(self, event: ModelCallEvent) -> None:
        self.usage = self.usage + event.usage
        self.emit(event)

    def _bind(self, model: Model) -> Model:
        # A copy per run: models are shared by concurrent runs, and each run's calls must go to
        # its own trajectory. A sink the caller set still gets every event.
        bound = copy.copy(model)
        outer = model.sink

        def sink(event: ModelCallEvent) -> None:
            self._on_model_call(event)
            if outer is not None:
                outer(event)

        bound.sink = sink
        return bound

    def _add(self, messages: list[Message], message: Message) -> None:
        messages.append(message)
        self.emit(MessageAdded(message=message))

    async def execute(self) -> Trajectory:
        inputs = InputSet(self.task.inputs)
        ctx, opts = self.ctx, self.options
        caps = ctx.model.capabilities
        mode: Mode = opts.mode or default_mode(inputs, caps)
        check_mode(mode, inputs, caps, ctx.model.name)
        variant: Variant = opts.variant or (
            "omniatlas" if mode in ("active", "evidence") else "base"
        )
        refs = list(ctx.tools) if ctx.tools is not None else default_tools(mode, inputs)
        check_tool_names(refs)
        names = [tool_name(r) for r in refs]
        model = self._bind(ctx.model)
        roles = {role: self._bind(m) for role, m in ctx.roles.items()}
        with contextlib.ExitStack() as stack:
            env = ToolEnv(inputs, model, ctx.workspace, stack, roles, ctx.budgets.model_dump())
            tools = build_tools(refs, env)
            self.emit(
                RunStart(
                    run_id=ctx.trajectory.run_id,
                    task_id=self.task.id,
                    question=self.task.question,
                    inputs=list(self.task.inputs),
                    agent="tir",
                    models={"agent": model.name} | {r: m.name for r, m in roles.items()},
                    config={
                        "mode": mode,
                        "variant": variant,
                        "tools": names,
                        "budgets": ctx.budgets.model_dump(),
                        "system_prompt": _SYSTEM[variant],
                        "generate": opts.generate.model_dump(exclude_defaults=True),
                        "max_observation_chars": opts.max_observation_chars,
                    },
                )
            )
            status = await self._guarded(model, tools, inputs, mode, variant)
        self.emit(
            RunEnd(status=status, usage=self.usage, wall_s=self.clock.elapsed(), turns=self.turns)
        )
        return Trajectory(
            header=ctx.trajectory.header, events=list(self.events), path=ctx.trajectory.path
        )

    async def _guarded(
        self, model: Model, tools: list[Tool], inputs: InputSet, mode: Mode, variant: Variant
    ) -> RunStatus:
        try:
            return await self._loop(model, tools, inputs, mode, variant)
        except ModelError as e:
            details = {"model": e.model, "error_kind": str(e.kind), "attempts": e.attempts}
            self.emit(ErrorEvent(error_kind="model", message=str(e), details=details))
            return "error"
        except (asyncio.CancelledError, Exception) as e:
            # The run is abandoned (cancelled, or a bug): the trajectory still ends properly
            # before the exception goes on.
            kind = "cancelled" if isinstance(e, asyncio.CancelledError) else "internal"
            trace = "".join(traceback.format_exception(e))
            self.emit(ErrorEvent(error_kind=kind, message=repr(e), details={"traceback": trace}))
            self.emit(
                RunEnd(
                    status="error", usage=self.usage, wall_s=self.clock.elapsed(), turns=self.turns
                )
            )
            raise

    async def _loop(
        self, model: Model, tools: list[Tool], inputs: InputSet, mode: Mode, variant: Variant
    ) -> RunStatus:
        budgets = self.ctx.budgets
        messages: list[Message] = []
        self._add(messages, Message.system(render(_SYSTEM[variant])))
        parts = await first_message_parts(
            self.task.question, inputs, mode, model.capabilities, self.ctx.workspace
        )
        self._add(messages, Message(role="user", content=parts))
        specs = [t.spec for t in tools]
        by_name = {t.name: t for t in tools}
        while self.turns < budgets.max_turns:
            if self._out_of_budget():
                return "budget"
            output = await self._call(model, messages, specs, self.options.generate)
            if output is None:
                return "budget"
            messages.append(output.message)
            if output.tool_calls:
                await self._tools(messages, by_name, output, model)
                continue
            answer, source = final_answer(output.text)
            if source in ("tag", "unclosed_tag") or (
                source == "whole_text" and not looks_like_tool_call(output.text)
            ):
                self.emit(AnswerEvent(text=output.text, answer=answer, source=source))
                return "answered"
            notice = (
                render("notice_empty")
                if source is None
                else render("notice_bad_call", tools=", ".join(by_name) or "(none)")
            )
            self._add(messages, Message.user(notice))
        return await self._forced_final(model, messages, specs, variant)

    def _out_of_budget(self) -> bool:
        limit = self.ctx.budgets.max_tokens
        if limit is not None and self.usage.total_tokens >= limit:
            message = f"token budget spent ({self.usage.total_tokens} of {limit} tokens)"
            self.emit(ErrorEvent(error_kind="budget", message=message))
            return True
        if self.clock.expired():
            message = f"time budget spent ({self.clock.limit:g} s)"
            self.emit(ErrorEvent(error_kind="budget", message=message))
            return True
        return False

    async def _call(
        self, model: Model, messages: list[Message], specs: list[ToolSpec], config: GenerateConfig
    ) -> ModelOutput | None:
        """One model call bounded by the time budget; ``None`` when the budget ran out."""
        self.turns += 1
        try:
            return await self.clock.bound(
                model.generate(list(messages), tools=specs, config=config)
            )
        except TimeoutError:
            message = f"time budget spent ({self.clock.limit:g} s) during a model call"
            self.emit(ErrorEvent(error_kind="budget", message=message))
            return None

    async def _tools(
        self, messages: list[Message], tools: dict[str, Tool], output: ModelOutput, model: Model
    ) -> None:
        outcomes = await run_tool_calls(
            output.tool_calls,
            tools,
            clock=self.clock,
            capabilities=model.capabilities,
            max_chars=self.options.max_observation_chars,
        )
        for call, (result, seconds) in zip(output.tool_calls, outcomes, strict=True):
            self.emit(
                ToolResultEvent(
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    result=result,
                    duration_s=seconds,
                )
            )
            messages.append(tool_message(call.id, result))

    async def _forced_final(
        self, model: Model, messages: list[Message], specs: list[ToolSpec], variant: Variant
    ) -> RunStatus:
        if self._out_of_budget():
            return "budget"
        prompt = render(_FORCED[variant], **self._forced_values(variant))
        self._add(messages, Message.user(prompt))
        config = self.options.generate.model_copy(update={"tool_choice": "none"})
        output = await self._call(model, messages, specs, config)
        if output is None:
            return "budget"
        answer, source = final_answer(output.text)
        self.emit(AnswerEvent(text=output.text, answer=answer, forced=True, source=source))
        return "answered" if answer is not None else "budget"

    def _forced_values(self, variant: Variant) -> dict[str, object]:
        return {"max_turns": self.ctx.budgets.max_turns} if variant == "omniatlas" else {}
