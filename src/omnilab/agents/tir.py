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

import contextlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnilab.agents.answer import final_answer, looks_like_tool_call
from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask
from omnilab.agents.delivery import Delivery
from omnilab.agents.session import AgentRun, Context
from omnilab.agents.templates import render
from omnilab.agents.tir_release import ReleaseLoop
from omnilab.agents.toolset import ToolEnv, build_tools, check_tool_names, default_tools
from omnilab.agents.views import MODES, Mode, check_mode, default_mode, first_message_parts
from omnilab.inputs import FileKind, InputSet
from omnilab.models.types import GenerateConfig, Message
from omnilab.tools._read_options import ReadOptions
from omnilab.tools.base import Tool
from omnilab.tools.registry import tool_name
from omnilab.trajectory import RunStatus, Trajectory

__all__ = ["TirAgent", "TirOptions", "Variant"]

Variant = Literal["base", "omniatlas"]
_SYSTEM: dict[Variant, str] = {"base": "omnigaia_base", "omniatlas": "omnigaia_omniatlas"}
_FORCED: dict[Variant, str] = {"base": "forced_final_base", "omniatlas": "forced_final_omniatlas"}


class TirOptions(BaseModel):
    """Options of the ``tir`` agent (``get_agent("tir", **options)``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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
    forced_final_generate: GenerateConfig | None = None
    """Sampling of the forced-final call; ``None``: ``generate``'s (the authors' code uses
    temperature 0.2, top_p 0.9, max_tokens 4096 there)."""
    on_empty: Literal["notice", "end"] = "notice"
    """An empty reply: ``notice`` asks again (``prompts/notice_empty.txt``); ``end`` ends the
    run without an answer, as the authors' code does."""
    on_bad_call: Literal["notice", "answer"] = "notice"
    """A final message that is an unreadable tool call: ``notice`` asks again; ``answer`` takes
    its text as the final answer, as the authors' code does."""
    delivery: Delivery = Field(default_factory=Delivery)
    """How media reach the model in the first message: soundtracks, frame sampling, the
    ``active`` start view (:class:`~omnilab.agents.delivery.Delivery`)."""
    rules: Literal["omnilab", "release"] = "omnilab"
    """``release``: the loop of OmniGAIA's released code (:mod:`omnilab.agents.tir_release`:
    Hermes block in the system message, no native tools, media then question only, errors for
    bad calls, reasoning kept as ``<think>``, no notices, no seed); ``omnilab``: this module's."""
    read_tools: ReadOptions = Field(default_factory=ReadOptions)
    """What read_video / read_audio / read_image return and when they are offered
    (:class:`~omnilab.tools.perception.ReadOptions`)."""


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
        opts = self.options
        inputs = InputSet(task.inputs)
        caps = ctx.model.capabilities
        mode: Mode = opts.mode or default_mode(inputs, caps)
        check_mode(mode, inputs, caps, ctx.model.name)
        variant: Variant = opts.variant or (
            "omniatlas" if mode in ("active", "evidence") else "base"
        )
        refs = (
            list(ctx.tools)
            if ctx.tools is not None
            else default_tools(mode, inputs, needs=_read_needs(opts.read_tools))
        )
        check_tool_names(refs)
        names = [tool_name(r) for r in refs]
        run = AgentRun(task, ctx, agent="tir", max_observation_chars=opts.max_observation_chars)
        model = run.models["agent"]
        with contextlib.ExitStack() as stack:
            roles = {r: m for r, m in run.models.items() if r != "agent"}
            env = ToolEnv(
                inputs,
                model,
                ctx.workspace,
                stack,
                roles,
                ctx.budgets.model_dump(),
                options={"read": opts.read_tools},
            )
            tools = build_tools(refs, env)
            config = {
                "mode": mode,
                "variant": variant,
                "tools": names,
                "budgets": ctx.budgets.model_dump(),
                "system_prompt": _SYSTEM[variant],
                "generate": opts.generate.model_dump(exclude_defaults=True),
                "max_observation_chars": opts.max_observation_chars,
                **opts.model_dump(
                    include={
                        "forced_final_generate",
                        "on_empty",
                        "on_bad_call",
                        "delivery",
                        "read_tools",
                        "rules",
                    },
                    exclude_defaults=True,
                    mode="json",
                ),
            }
            if opts.rules == "release":
                release = _release_loop(run, opts, inputs, variant, tools)
                return await run.execute(release.run, config=config)
            loop = _Loop(run, opts, inputs, mode, variant, tools)
            return await run.execute(loop.run, config=config)


def _release_loop(
    run: AgentRun, opts: TirOptions, inputs: InputSet, variant: Variant, tools: list[Tool]
) -> ReleaseLoop:
    values = {"max_turns": run.budgets.max_turns} if variant == "omniatlas" else {}
    return ReleaseLoop(
        run,
        system=render(_SYSTEM[variant]),
        forced_prompt=render(_FORCED[variant], **values),
        inputs=inputs,
        tools=tools,
        generate=opts.generate,
        forced_generate=opts.forced_final_generate or opts.generate,
        delivery=opts.delivery,
    )


def _read_needs(read: ReadOptions) -> dict[str, frozenset[FileKind] | None]:
    """When read_audio and read_image are offered, as ``read`` says."""
    needs: dict[str, frozenset[FileKind] | None] = {}
    if read.read_audio_for == "audio":
        needs["read_audio"] = frozenset({"audio"})
    if read.read_image_for == "always":
        needs["read_image"] = None
    return needs


class _Loop:
    """The tir loop on one :class:`AgentRun`."""

    def __init__(
        self,
        run: AgentRun,
        options: TirOptions,
        inputs: InputSet,
        mode: Mode,
        variant: Variant,
        tools: list[Tool],
    ) -> None:
        self.run_ = run
        self.options = options
        self.inputs = inputs
        self.mode: Mode = mode
        self.variant: Variant = variant
        self.tools = tools
        self.by_name = {t.name: t for t in tools}

    async def run(self) -> RunStatus:
        run, task = self.run_, self.run_.task
        chat = run.context("agent")
        run.add(chat, Message.system(render(_SYSTEM[self.variant])))
        model = run.models["agent"]
        parts = await first_message_parts(
            task,
            self.inputs,
            self.mode,
            model.capabilities,
            run.ctx.workspace,
            self.options.delivery,
        )
        run.add(chat, Message(role="user", content=parts))
        while run.turns < run.budgets.max_turns:
            if run.out_of_budget():
                return "budget"
            output = await run.call("agent", chat, tools=self.tools, config=self.options.generate)
            if output is None:
                return "budget"
            if output.tool_calls:
                await run.run_tools(output.tool_calls, chat, self.by_name)
                continue
            _answer, source = final_answer(output.text)
            if source in ("tag", "unclosed_tag") or (
                source == "whole_text" and not looks_like_tool_call(output.text)
            ):
                return run.answer(output)
            if source is None and self.options.on_empty == "end":
                return run.answer(output)  # no text: recorded as no answer
            if source is not None and self.options.on_bad_call == "answer":
                return run.answer(output.text, verbatim=True)
            notice = (
                render("notice_empty")
                if source is None
                else render("notice_bad_call", tools=", ".join(self.by_name) or "(none)")
            )
            run.add(chat, Message.user(notice))
        return await self._forced_final(chat)

    async def _forced_final(self, chat: Context) -> RunStatus:
        run = self.run_
        if run.out_of_budget():
            return "budget"
        values = {"max_turns": run.budgets.max_turns} if self.variant == "omniatlas" else {}
        run.add(chat, Message.user(render(_FORCED[self.variant], **values)))
        sampling = self.options.forced_final_generate or self.options.generate
        config = sampling.model_copy(update={"tool_choice": "none"})
        output = await run.call("agent", chat, tools=self.tools, config=config)
        if output is None:
            return "budget"
        status = run.answer(output, forced=True, tool_names=self.by_name)
        if status == "no_answer" and not output.text.strip() and not output.tool_calls:
            return "budget"  # nothing at all came back: the turns ran out without an answer
        return status
