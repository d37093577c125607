"""``ota``: OmniAgent's Observation-Thought-Action loop (Algorithm 1) on :class:`AgentRun`.

Each turn the model writes one JSON object ``{observation, think, confidence, action}``
(:mod:`.protocol`); the environment (:mod:`.env`) answers a sensing action with the media it asked
for, or with an ``[ERROR]`` the model can act on, and every message ends with the step notice.
After each turn the media of the previous turn are replaced by their placeholders (B.4,
:mod:`.memory`) through ``AgentRun.edit``, so the context holds the media of one turn at most and
``Trajectory.contexts()`` rebuilds what the model saw at every call. Each turn's observation,
confidence, action and error code is a ``StepNote`` (``omnilab ask`` shows it live).

Answers: ``answer`` ends the run, unless its confidence is below the threshold (0.9) before the
final step, which is refused (``LOW_CONFIDENCE``: Figure 4's "continue gathering evidence unless
[NOTICE] indicates FINAL STEP"; ``strict_confidence=false`` accepts it). At the final step any
answer counts and any other reply ends the run without an answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask
from omnilab.agents.ota.env import Describe, OtaEnv, media_error
from omnilab.agents.ota.memory import Percept, clock, placeholder_message
from omnilab.agents.ota.options import OtaOptions, turn_limit
from omnilab.agents.ota.prompts import (
    error_text,
    first_message,
    notice,
    system_prompt,
    warning_text,
)
from omnilab.agents.ota.protocol import OtaError, Turn, parse_turn, turn_schema
from omnilab.agents.session import AgentRun, Context
from omnilab.agents.templates import render
from omnilab.content import Content, Image, Text
from omnilab.inputs import InputFile
from omnilab.media.errors import MediaError
from omnilab.models.types import GenerateConfig, Message, ResponseFormat
from omnilab.trajectory import RunStatus, Trajectory

__all__ = ["OtaAgent"]


def _source(task: AgentTask) -> InputFile:
    for kind in ("video", "audio"):
        for f in task.inputs:
            if f.kind == kind:
                return f
    raise AgentConfigError("ota needs a video (or audio) input; none was given")


class OtaAgent:
    """OmniAgent's Observation-Thought-Action agent for long audio-visual videos."""

    name = "ota"
    options_model = OtaOptions

    def __init__(self, **options: object) -> None:
        try:
            self.options = OtaOptions.model_validate(options)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "options"
            raise AgentConfigError(f"bad ota option {where}: {first['msg']}") from None

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        """Answer ``task`` about its first video (else audio) input.

        Raises :class:`AgentConfigError` before anything is written when the task has no video
        or audio, the file cannot be read, or the perception model does not take images.
        """
        opts = self.options
        source = _source(task)
        try:
            info = source.probe()
        except MediaError as e:
            raise AgentConfigError(f"ota cannot read {source.id}: {e.message}") from None
        perception = ctx.roles.get("perception")
        caps = ctx.model.capabilities
        if perception is not None and not caps.image and not perception.capabilities.image:
            raise AgentConfigError(
                f"the perception model {perception.name} does not take images, so it cannot "
                "describe frames for a text-only agent model"
            )
        run = AgentRun(task, ctx, agent=self.name)
        describe = _describer(run) if perception is not None and not caps.image else None
        env = OtaEnv(source, info, caps, opts, describe=describe)
        total = turn_limit(opts, env.duration, ctx.budgets.max_turns)
        grammar = caps.json_schema if opts.grammar is None else opts.grammar
        generate = opts.generate
        if grammar:
            schema = ResponseFormat(json_schema=turn_schema(opts.max_frames_len), name="ota_turn")
            generate = generate.model_copy(update={"response_format": schema})
        config = {
            **opts.model_dump(exclude={"generate", "grammar"}),
            "generate": opts.generate.model_dump(exclude_defaults=True),
            "mode": env.conversions.summary(),
            "conversions": vars(env.conversions),
            "source": source.id,
            "meta": env.meta(),
            "turn_limit": total,
            "grammar": grammar,
        }
        loop = _Loop(run, env, total, generate)
        return await run.execute(loop.run, config=config)


def _describer(run: AgentRun) -> Describe:
    async def describe(shots: Sequence[tuple[float, Path]]) -> str:
        times = ", ".join(clock(t) for t, _ in shots)
        chat = run.context("perception")
        parts: list[Content] = [Text(text=render("ota_describe_frames", times=times))]
        for t, path in shots:
            parts += [Text(text=clock(t)), Image(path=path, mime_type="image/jpeg")]
        run.add(chat, Message(role="user", content=parts))
        output = await run.call("perception", chat, turn=False)
        return output.text.strip() if output is not None else "(no description: time ran out)"

    return describe


class _Loop:
    """One run of the OTA loop."""

    def __init__(self, run: AgentRun, env: OtaEnv, total: int, generate: GenerateConfig) -> None:
        self.run_ = run
        self.env = env
        self.total = total
        self.generate = generate
        self.done: set[tuple[object, ...]] = set()
        self.pending: tuple[int, Message] | None = None
        """Where the message with the latest media is and the placeholder it becomes."""

    async def run(self) -> RunStatus:
        run, env = self.run_, self.env
        chat = run.context("agent")
        run.add(chat, Message.system(system_prompt(env.options)))
        run.add(chat, Message.user(first_message(run.task, env.meta(), self.total)))
        for step in range(1, self.total + 1):
            if run.out_of_budget():
                return "budget"
            output = await run.call("agent", chat, config=self.generate)
            if output is None:
                return "budget"
            turn = parse_turn(output.text)
            self._consolidate(chat, step)
            final = step == self.total
            status = await self._act(chat, turn, step, final)
            if status is not None:
                return status
        return "no_answer"  # not reached: the final step always ends the run

    def _consolidate(self, chat: Context, step: int) -> None:
        """B.4: the previous turn's media become their placeholder now that the model wrote
        its observation of them."""
        if self.pending is None:
            return
        index, placeholder = self.pending
        self.run_.edit(
            chat,
            index,
            index + 1,
            [placeholder],
            reason=f"memory consolidation (OmniAgent B.4): media of turn {step - 1} omitted",
        )
        self.pending = None

    async def _act(self, chat: Context, turn: Turn, step: int, final: bool) -> RunStatus | None:
        run, env = self.run_, self.env
        error = turn.error
        percept: Percept | None = None
        action = turn.action
        if error is None and action is not None:
            if action.type == "answer":
                threshold = env.options.confidence_threshold
                confidence = turn.confidence if turn.confidence is not None else 0.0
                if final or confidence >= threshold or not env.options.strict_confidence:
                    self._note(step, turn, None)
                    return run.answer(action.content)
                error = OtaError(
                    "LOW_CONFIDENCE",
                    f"confidence {confidence:g} is below {threshold:g}: keep gathering evidence "
                    "and answer when you reach it, or at the FINAL STEP",
                )
            elif final:
                error = OtaError("FINAL_STEP", "no answer at the final step")
            else:
                action, error = env.check(action)
                if error is None and action.key() in self.done:
                    error = OtaError(
                        "REPEAT_ACTION",
                        f"{action.summary()} was already done; inspect another range, another "
                        "modality or a higher density",
                    )
                if error is None:
                    try:
                        percept = await env.perceive(action)
                    except MediaError as e:
                        error = media_error(e, env.source)
                    else:
                        self.done.add(action.key())
        if final:
            if error is None or error.code != "FINAL_STEP":
                error = OtaError(
                    "FINAL_STEP", f"no answer at the final step ({error.code if error else 'none'})"
                )
            self._note(step, turn, error)
            run.answer("", forced=True)
            return "no_answer"
        self._note(step, turn, error)
        self._feedback(chat, turn, error, percept, step)
        return None

    def _feedback(
        self, chat: Context, turn: Turn, error: OtaError | None, percept: Percept | None, step: int
    ) -> None:
        """The environment's message for the next turn: percept or error, warnings, notice."""
        trailer = []
        if turn.warnings and error is None:
            trailer.append(warning_text(turn.warnings))
        trailer.append(notice(step + 1, self.total))
        if percept is None:
            assert error is not None
            texts = [error_text(error), *trailer]
            self.run_.add(chat, Message(role="user", content=[Text(text=t) for t in texts]))
            return
        parts: list[Content] = [Text(text=percept.label), *percept.parts]
        parts += [Text(text=t) for t in trailer]
        self.run_.add(chat, Message(role="user", content=parts))
        self.pending = (len(chat.messages) - 1, placeholder_message(percept, trailer))

    def _note(self, step: int, turn: Turn, error: OtaError | None) -> None:
        action = turn.action.summary() if turn.action is not None else "(no action)"
        confidence = "?" if turn.confidence is None else f"{turn.confidence:.2f}"
        line = f"{action} | confidence {confidence}"
        if error is not None:
            line += f" | [ERROR] {error.code}"
        if turn.warnings:
            line += " | format warning"
        if turn.observation:
            line += f" | observation: {turn.observation}"
        self.run_.note(
            f"turn {step}",
            line,
            step=step,
            total=self.total,
            observation=turn.observation,
            think=turn.think,
            confidence=turn.confidence,
            action=turn.action.to_dict() if turn.action is not None else None,
            error=None if error is None else {"code": error.code, "message": error.message},
            format_warnings=list(turn.warnings),
        )
