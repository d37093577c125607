"""``coder``: a sandboxed terminal agent for media tasks (Code-X, Appendix I.1).

Each turn the model calls one tool: ``execute_commands`` (a command in the task's persistent
sandboxed bash), ``image_read`` (an image of the workspace, which the harness then adds to the
conversation as a native image) or ``task_complete`` (ends the run once an ``<answer>`` wrapper
exists; without one the model gets one format reminder, then the run ends as empty). A reply
without a tool call gets a runtime reminder; a malformed call gets a format reminder. The loop
stops on completion, the step limit, repeated replies without a tool call, or a runtime error,
and says which (``exit`` note, ``rollout.json``).

With ``summarize_on_overflow`` a conversation that no longer fits the model's context is
summarized by the model (no tools) and replaced by the task plus that summary, and the step is
tried once more, as the released KIRA harness does (``kira/summarize.py``); a second overflow
ends the run.

Answers are taken only from the ``<answer>`` wrapper (Appendix I.1): a run that ends without a
tool call after its reminders, or at the step limit, answers with the last wrapper the model
wrote in any turn, and with none when it never wrote one (its untagged text is not an answer).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnilab.agents.answer import extract_answer, looks_like_tool_call
from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask
from omnilab.agents.coder.artifacts import Rollout
from omnilab.agents.coder.staging import stage_inputs, task_prompt
from omnilab.agents.coder.toolbox import install_toolbox, toolbox_report
from omnilab.agents.coder.tools import ShellTools, ToolSchema, make_tools
from omnilab.agents.session import AgentRun, Context, ToolRound
from omnilab.agents.templates import render
from omnilab.agents.views import accepts
from omnilab.config import get_settings
from omnilab.content import Content, Image, Text
from omnilab.models.errors import ErrorKind, ModelError
from omnilab.models.types import GenerateConfig, Message, ModelOutput
from omnilab.sandbox import ShellSession
from omnilab.skills import (
    Skill,
    load_skills,
    render_skills,
    select_skills,
    stage_skills,
    starter_skills,
)
from omnilab.textcut import cut_text
from omnilab.tools.base import Tool
from omnilab.trajectory import RunStatus, Trajectory

__all__ = ["CoderAgent", "CoderOptions", "ExitReason"]

ExitReason = Literal[
    "completion", "no_answer", "step_limit", "no_tool_call", "timeout", "runtime_error"
]
TOOL_NAMES = ("execute_commands", "image_read", "task_complete")


class CoderOptions(BaseModel):
    """Options of the ``coder`` agent (``get_agent("coder", **options)``, ``-O key=value``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    network: bool = False
    """Let shell commands reach the network (web-enabled settings); off by default."""
    command_timeout: float = Field(default=120.0, gt=0)
    """Seconds a command may run when the call gives no ``wait_seconds``."""
    max_command_timeout: float = Field(default=600.0, gt=0)
    """The most ``wait_seconds`` a call may ask for."""
    output_bytes: int = Field(default=16000, ge=400)
    """Head plus tail kept of a command's stdout and of its stderr."""
    merge_output: bool = False
    """Send stderr into stdout, so ``output_bytes`` caps the one merged stream (the released
    KIRA shell's way); by default each stream is cut on its own."""
    max_observation_chars: int | None = Field(default=None, ge=200)
    """Also cut each observation's text to this many characters (small context windows)."""
    max_edge: int = Field(default=1024, ge=32)
    """Longest edge, in pixels, of an image shown by ``image_read``."""
    max_reminders: int = Field(default=2, ge=0)
    """Replies in a row without a tool call that get a reminder before the run stops."""
    tool_schema: ToolSchema = "omnilab"
    """``omnilab``: omnilab's tool schemas and system prompt; ``kira``: the released KIRA
    harness's, verbatim (``execute_commands(..., duration)``, ``image_read(file_path,
    image_read_instruction)``, ``task_complete()``; ``coder_system_kira.txt``)."""
    summarize_on_overflow: bool = False
    """When the conversation no longer fits the model's context, have the model summarize it
    and go on from the task plus the summary (the released KIRA harness's default); off, the
    run ends with the context error."""
    repeat_notice: bool = True
    """Append a notice to the third (and later) identical call's result. omnilab's addition:
    the paper's harness has none (the ``code-x-omnigaia`` preset turns it off)."""
    skills: str | None = None
    """Skills to inject: ``starter`` (the shipped set) or a skills folder; none by default."""
    max_skills: int = Field(default=6, ge=1)
    """The most skills injected into one prompt."""
    isolation: str | None = None
    """Sandbox level (``bwrap``, ``namespaces``, ``process``); default from the settings."""
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    """Sampling settings of every call."""


def _options_error(e: ValidationError) -> AgentConfigError:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "options"
    return AgentConfigError(f"bad coder option {where}: {first['msg']}")


class CoderAgent:
    """The Code-X terminal agent (see the module docstring)."""

    name = "coder"
    options_model = CoderOptions

    def __init__(self, **options: object) -> None:
        try:
            self.options = CoderOptions.model_validate(options)
        except ValidationError as e:
            raise _options_error(e) from None
        if self.options.max_command_timeout < self.options.command_timeout:
            raise AgentConfigError("coder: max_command_timeout must be >= command_timeout")
        self._skills: list[Skill] | None = None

    def skill_pool(self) -> list[Skill]:
        """The skills this agent may inject (loaded once)."""
        if self._skills is None:
            source = self.options.skills
            if source is None:
                self._skills = []
            elif source == "starter":
                self._skills = starter_skills()
            else:
                self._skills = load_skills(Path(source).expanduser())
        return self._skills

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        """Solve ``task`` in a sandboxed shell; every step goes to ``ctx.trajectory``."""
        if ctx.tools is not None:
            raise AgentConfigError(
                "the coder agent has a fixed tool set (execute_commands, image_read, "
                "task_complete); drop --tools"
            )
        opts = self.options
        pool = self.skill_pool()
        ctx.workspace.mkdir(parents=True, exist_ok=True)
        files = stage_inputs(task, ctx.workspace)
        kinds = {str(i.kind) for i in task.inputs}
        chosen = select_skills(pool, task.question, kinds, limit=opts.max_skills)
        stage_skills(chosen, ctx.workspace)
        env = install_toolbox(ctx.workspace)
        limits = get_settings().sandbox.limits.model_copy(
            update={
                "output_bytes": opts.output_bytes,
                "wall_seconds": opts.max_command_timeout,
                "cpu_seconds": max(
                    get_settings().sandbox.limits.cpu_seconds, opts.max_command_timeout
                ),
            }
        )
        run = AgentRun(
            task,
            ctx,
            agent=self.name,
            calls_per_turn=1,
            terminal_tools={"task_complete"},
            max_observation_chars=opts.max_observation_chars,
            repeat_notice_at=3 if opts.repeat_notice else None,
        )
        rollout = Rollout.beside(ctx.trajectory.path, ctx.workspace)
        with contextlib.ExitStack() as stack:
            shell = stack.enter_context(
                ShellSession(
                    ctx.workspace,
                    limits=limits,
                    network=opts.network,
                    env=env,
                    isolation=opts.isolation,
                )
            )
            tools_env = ShellTools(
                shell=shell,
                workspace=ctx.workspace,
                default_wait=opts.command_timeout,
                max_wait=opts.max_command_timeout,
                max_edge=opts.max_edge,
                merge_output=opts.merge_output,
            )
            tools = make_tools(tools_env, schema=opts.tool_schema)
            loop = _Loop(run, opts, tools_env, tools, rollout)
            if opts.tool_schema == "kira":
                system = render("coder_system_kira", skills=render_skills(chosen))
            else:
                system = render(
                    "coder_system",
                    toolbox=toolbox_report().prompt_lines(),
                    skills=render_skills(chosen),
                )
            first = task_prompt(task, files, network=opts.network)
            config: dict[str, Any] = {
                "tools": list(TOOL_NAMES),
                "staged_files": files,
                # For the reward's escape check (paths inside it are not escapes); never shown
                # to the model.
                "workspace": str(ctx.workspace.resolve()),
                "skills_injected": [s.name for s in chosen],
                "toolbox": toolbox_report().as_dict(),
                "budgets": ctx.budgets.model_dump(),
                **opts.model_dump(exclude={"generate"}),
                "generate": opts.generate.model_dump(exclude_defaults=True),
            }

            async def body() -> RunStatus:
                return await loop.run(system, first)

            try:
                trajectory = await run.execute(body, config=config)
            finally:
                rollout.write(run, loop.exit_reason, shell_restarts=shell.restarts)
        return trajectory


class _Loop:
    """The coder loop on one :class:`AgentRun`."""

    def __init__(
        self,
        run: AgentRun,
        options: CoderOptions,
        env: ShellTools,
        tools: list[Tool],
        rollout: Rollout,
    ) -> None:
        self.run_ = run
        self.options = options
        self.env = env
        self.tools = tools
        self.by_name = {t.name: t for t in tools}
        self.rollout = rollout
        self.exit_reason: ExitReason = "runtime_error"
        self.texts: list[str] = []
        """The assistant texts so far (where a wrapped answer may already be)."""

    def _exit(self, reason: ExitReason, status: RunStatus) -> RunStatus:
        self.exit_reason = reason
        self.run_.note("exit", reason, exit_reason=reason)
        return status

    async def run(self, system: str, first: str) -> RunStatus:
        run = self.run_
        chat = run.context("agent")
        run.add(chat, Message.system(system))
        run.add(chat, Message.user(first))
        quiet = 0
        reminded_answer = False
        while run.turns < run.budgets.max_turns:
            if run.out_of_budget():
                return self._stopped("timeout")
            output = await self._step(chat, system, first)
            if output is None:
                return self._stopped("timeout")
            if output.text.strip():
                self.texts.append(output.text)
            if not output.tool_calls:
                quiet += 1
                if quiet > self.options.max_reminders:
                    # No-tool-call exhaustion: the answer is the last wrapper, if any (I.1);
                    # untagged replies stay in the conversation, never become the answer (the
                    # paper scores such a run as empty, as it does one without the wrapper).
                    status = run.answer(self._last_wrapped() or "")
                    return self._exit("no_tool_call", status)
                if looks_like_tool_call(output.text):
                    problem = "it was written as text and could not be parsed"
                    run.add(chat, Message.user(self._bad_call(problem)))
                else:
                    run.add(chat, Message.user(render("coder_reminder_no_tool")))
                continue
            quiet = 0
            done = await run.run_tools(output.tool_calls, chat, self.by_name)
            self._show_images(chat, done)
            self._remind_malformed(chat, done)
            if done.terminal is None:
                continue
            wrapped = self._wrapped_answer(done, output)
            if wrapped is not None:
                return self._exit("completion", run.answer(wrapped))
            if reminded_answer:
                run.answer("")  # the paper scores a run without the wrapper as empty
                return self._exit("no_answer", "no_answer")
            reminded_answer = True
            run.add(chat, Message.user(render("coder_reminder_no_answer")))
        return self._stopped("step_limit")

    async def _step(self, chat: Context, system: str, first: str) -> ModelOutput | None:
        """One agent call; on a context overflow (with ``summarize_on_overflow``) the history is
        summarized and the call is tried once more, as the same turn."""
        run = self.run_
        try:
            return await run.call("agent", chat, tools=self.tools, config=self.options.generate)
        except ModelError as e:
            if e.kind is not ErrorKind.CONTEXT_LENGTH or not self.options.summarize_on_overflow:
                raise
        summary = await self._summarize(chat, first)
        if summary is None:
            return None
        handoff = render("coder_summary_handoff", task=first, summary=summary)
        run.edit(
            chat,
            0,
            len(chat.messages),
            [Message.system(system), Message.user(handoff)],
            reason="context overflow: the conversation was summarized (KIRA's recovery)",
        )
        run.note("context overflow", "the conversation was summarized; the step is tried again")
        return await run.call(
            "agent", chat, tools=self.tools, config=self.options.generate, turn=False
        )

    async def _summarize(self, chat: Context, task: str) -> str | None:
        """The model's summary of the conversation so far (no tools, not a turn)."""
        blocks = []
        for message in chat.messages:
            if message.role == "system":
                continue
            body = cut_text(message.text, 4000, head_share=0.5)
            if message.tool_calls:
                calls = [{"name": c.name, "args": c.arguments} for c in message.tool_calls]
                body += ("\n" if body else "") + f"[tool_calls: {json.dumps(calls)[:4000]}]"
            blocks.append(f"<{message.role}> {body}")
        request = render("coder_summary_request", task=task, conversation="\n\n".join(blocks))
        side = self.run_.context("agent", name="summary", messages=[Message.user(request)])
        output = await self.run_.call("agent", side, turn=False)
        return None if output is None else output.text.strip()

    def _last_wrapped(self) -> str | None:
        """The latest reply of the run that holds an ``<answer>`` wrapper."""
        return next((t for t in reversed(self.texts) if extract_answer(t) is not None), None)

    def _stopped(self, reason: ExitReason) -> RunStatus:
        """A run the step limit or the time budget stopped: an answer the model wrapped in an
        earlier turn is its answer (the paper removes only rollouts that never emitted one)."""
        wrapped = self._last_wrapped()
        if wrapped is not None:
            self.run_.answer(wrapped)
        return self._exit(reason, "budget")

    def _bad_call(self, problem: str) -> str:
        return render("coder_reminder_bad_call", problem=problem, tools=", ".join(TOOL_NAMES))

    def _remind_malformed(self, chat: Context, done: ToolRound) -> None:
        """A format reminder after a call that could not be read or named no tool."""
        for outcome in done.outcomes:
            error = outcome.result.error
            if error is None or error.code not in ("INVALID_ARGS", "UNKNOWN_TOOL"):
                continue
            self.run_.add(chat, Message.user(self._bad_call(error.message)))
            return

    def _show_images(self, chat: Context, done: ToolRound) -> None:
        """Each image ``image_read`` loaded goes into the conversation as a user message (the
        tool message holds only the acknowledgement, Appendix I.1)."""
        if not self.env.images:
            return
        caps = self.run_.models["agent"].capabilities
        for name, data in self.env.images:
            path = self.rollout.save_image(name, data)
            image = Image(path=path, mime_type="image/png")
            parts: list[Content] = [Text(text=f"Image {name}:")]
            if accepts(caps, image):
                parts.append(image)
            else:
                parts.append(Text(text="[not shown: this model does not take images]"))
            self.run_.add(chat, Message(role="user", content=parts))
        self.env.images.clear()
        del done

    def _wrapped_answer(self, done: ToolRound, output: ModelOutput) -> str | None:
        """The text holding the latest ``<answer>`` wrapper: the task_complete call's argument,
        else this reply, else an earlier reply of the run."""
        assert done.terminal is not None
        argument = str(done.terminal.call.arguments.get("answer", "") or "")
        for text in (argument, output.text, *reversed(self.texts)):
            if extract_answer(text):
                return text
        return None
