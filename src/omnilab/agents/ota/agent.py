"""``ota``: OmniAgent's Observation-Thought-Action loop (Algorithm 1) on :class:`AgentRun`.

Each turn the model writes one JSON object ``{observation, think, confidence, action}``
(:mod:`.protocol`); the environment (:mod:`.env`) answers a sensing action with the media it asked
for, or with an ``[ERROR]`` the model can act on, and every message ends with the step notice.
After each turn the media of the previous turn are replaced by their placeholders (B.4,
:mod:`.memory`) through ``AgentRun.edit``, so the context holds the media of one turn at most and
``Trajectory.contexts()`` rebuilds what the model saw at every call. Each turn's observation,
confidence, action and error code is a ``StepNote`` (``omnilab ask`` shows it live).

Only the latest step notice stays in the context (the release's ``_append_step_notice``): the
notice is the last part of the newest environment message and goes from the older one.

Answers: ``answer`` ends the run unless its form cannot be scored (``check_answers``: a TR
answer without spans, a NUM/SIZE answer without a number), it comes at step 1 under
``refuse_early_answer`` (the release's EARLY_ANSWER), or it is below the opt-in
``confidence_threshold``; each is refused with an error and the model tries again. The released
environment has no confidence threshold (Figure 4's "0.9" rule is an instruction to the model).
At the final step any answer counts under omnilab's rules and any other reply ends the run
without an answer; under the release's rules a refused final reply ends it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask, TaskInputError
from omnilab.agents.ota import release
from omnilab.agents.ota.env import Describe, OtaEnv, media_error
from omnilab.agents.ota.memory import Percept, clock, placeholder_message
from omnilab.agents.ota.options import OtaOptions, randomised, turn_limit
from omnilab.agents.ota.prompts import (
    error_text,
    first_message,
    notice,
    release_seconds,
    system_prompt,
    warning_text,
)
from omnilab.agents.ota.protocol import NUMBER, Action, OtaError, Turn, parse_turn, turn_schema
from omnilab.agents.question import omniagent_answer_format
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
    raise TaskInputError("ota needs a video (or audio) input; none was given")


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

        Raises :class:`TaskInputError` before anything is written when the task has no video
        or audio or the file cannot be read (that task fails), :class:`AgentConfigError` when
        the perception model does not take images (every task would).
        """
        opts = randomised(self.options, task.id)
        source = _source(task)
        try:
            info = source.probe()
        except MediaError as e:
            raise TaskInputError(f"ota cannot read {source.id}: {e.message}") from None
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
        # The release samples freely (no guided decoding): its parser's errors can then occur.
        free = opts.rules == "release"
        grammar = caps.json_schema and not free if opts.grammar is None else opts.grammar
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
        if opts.random_resources:
            config["drawn"] = {
                "max_steps": opts.max_steps,
                "max_frames_len": opts.max_frames_len,
                "max_audio_len": opts.max_audio_len,
                "max_clip_len": opts.max_clip_len,
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


_EDIT_NOTICE = "step notice superseded (only the latest notice stays, as in the release)"


def _media_code(action: Action) -> str:
    """The release's code for a media failure of ``action`` (it ends the run there)."""
    return {"get_frames": "FFMPEG_FRAME_FAIL", "get_audio": "FFMPEG_AUDIO_FAIL"}.get(
        action.type, "FFMPEG_CLIP_FAIL"
    )


class _Loop:
    """One run of the OTA loop."""

    def __init__(self, run: AgentRun, env: OtaEnv, total: int, generate: GenerateConfig) -> None:
        self.run_ = run
        self.env = env
        self.options = env.options
        self.release = env.options.rules == "release"
        self.total = total
        self.generate = generate
        self.kind = release.question_type(run.task)
        self.done: set[tuple[object, ...]] = set()
        self.pending: tuple[int, Message] | None = None
        """Where the message with the latest media is and the placeholder it becomes."""
        self.notice_at: int | None = None
        """Where the message whose last part is the latest notice is."""

    async def run(self) -> RunStatus:
        run, env = self.run_, self.env
        chat = run.context("agent")
        run.add(chat, Message.system(system_prompt(self.options)))
        first = first_message(
            run.task,
            self.options,
            duration=env.duration,
            fps=env.info.fps,
            has_audio=env.has_audio,
        )
        parts = [Text(text=first), Text(text=notice(1, self.total, self.options))]
        run.add(chat, Message(role="user", content=parts))
        self.notice_at = len(chat.messages) - 1
        limit = self.options.max_prompt_tokens
        for step in range(1, self.total + 1):
            if run.out_of_budget():
                return "budget"
            output = await run.call("agent", chat, config=self.generate)
            if output is None:
                return "budget"
            if self.release:
                turn = release.parse_reply(
                    output.text, require_confidence=self.options.require_confidence
                )
            else:
                turn = parse_turn(output.text, require_confidence=self.options.require_confidence)
                self._consolidate(chat, step)
            status = await self._act(chat, turn, step, step == self.total)
            if status is not None:
                return status
            used = output.usage.prompt_tokens + output.usage.completion_tokens
            if limit is not None and used > limit - 32:
                return self._token_limit(step, used, limit)
        return "no_answer"  # not reached: the final step always ends the run

    def _token_limit(self, step: int, used: int, limit: int) -> RunStatus:
        code = "TOKEN_LIMIT_EXCEEDED" if self.release else "TOKEN_LIMIT"
        message = (
            release.text("err.TOKEN_LIMIT_EXCEEDED", tokens=used, limit=limit)
            if self.release
            else f"this call used {used} tokens; max_prompt_tokens is {limit}"
        )
        self._note(step, Turn(), OtaError(code, message))
        return "budget"

    def _consolidate(self, chat: Context, step: int) -> None:
        """B.4: the previous turn's media become their placeholder now that the model wrote
        its observation of them (omnilab's rules; the release's wait for newer media)."""
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
        if self.notice_at == index:
            self.notice_at = None  # the placeholder carries no notice

    def _retire(self, chat: Context, step: int, media: bool) -> None:
        """Before the environment's next message: the older notice goes, and under the
        release's rules older media go once newer media arrive (``_replace_old_media(1)``)."""
        edits: dict[int, tuple[Message, str]] = {}
        if self.pending is not None and media:
            index, placeholder = self.pending
            reason = f"memory consolidation (OmniAgent B.4): media before turn {step} omitted"
            edits[index] = (placeholder, reason)
            self.pending = None
        if self.notice_at is not None and self.notice_at not in edits:
            old = chat.messages[self.notice_at]
            edits[self.notice_at] = (Message(role=old.role, content=old.content[:-1]), _EDIT_NOTICE)
        self.notice_at = None
        for index, (message, reason) in sorted(edits.items()):
            self.run_.edit(chat, index, index + 1, [message], reason=reason)

    def _answer_error(self, turn: Turn, action: Action, step: int, final: bool) -> OtaError | None:
        o = self.options
        early = o.refuse_early_answer if o.refuse_early_answer is not None else self.release
        if early and step == 1 and (self.release or not final):
            if self.release:
                return OtaError("EARLY_ANSWER", release.text("err.EARLY_ANSWER"))
            return OtaError(
                "EARLY_ANSWER", "gather evidence before answering: inspect the video first"
            )
        if final and not self.release:
            return None  # omnilab's rules: the final step takes any answer
        threshold = o.confidence_threshold
        confidence = turn.confidence if turn.confidence is not None else 0.0
        if threshold is not None and not final and confidence < threshold:
            return OtaError(
                "LOW_CONFIDENCE",
                f"confidence {confidence:g} is below {threshold:g}: keep gathering evidence "
                "and answer when you reach it, or at the FINAL STEP",
            )
        if not o.check_answers:
            return None
        if self.release:
            return release.answer_error(action.content, self.kind)
        return _answer_form(action.content, self.kind)

    async def _act(self, chat: Context, turn: Turn, step: int, final: bool) -> RunStatus | None:
        run, env = self.run_, self.env
        error = turn.error
        percept: Percept | None = None
        action = turn.action
        ends = False
        if error is None and action is not None:
            if final and action.type != "answer":
                error = (
                    OtaError("STEP_LIMIT_REACHED", "STEP_LIMIT_REACHED")
                    if self.release
                    else OtaError("FINAL_STEP", "no answer at the final step")
                )
            elif action.type == "answer":
                error = self._answer_error(turn, action, step, final)
                if error is None:
                    self._note(step, turn, None)
                    return run.answer(action.content.strip())
            else:
                action, error = self._check(action)
                if error is None:
                    try:
                        percept = await env.perceive(action)
                    except MediaError as e:
                        error = media_error(e, env.source)
                        if self.release:
                            error = OtaError(_media_code(action), error.message)
                            ends = True
                    else:
                        self.done.add(action.key())
        if final and not self.release and (error is None or error.code != "FINAL_STEP"):
            code = error.code if error else "none"
            error = OtaError("FINAL_STEP", f"no answer at the final step ({code})")
        if final or ends:
            self._note(step, turn, error)
            run.answer("", forced=True)
            return "no_answer"
        self._note(step, turn, error)
        self._feedback(chat, turn, error, percept, step)
        return None

    def _check(self, action: Action) -> tuple[Action, OtaError | None]:
        env = self.env
        if not self.release:
            action, error = env.check(action)
            if error is None and action.key() in self.done:
                error = OtaError(
                    "REPEAT_ACTION",
                    f"{action.summary()} was already done; inspect another range, another "
                    "modality or a higher density",
                )
            return action, error
        if action.type in ("get_frames", "get_clip") and not env.has_video:
            return action, OtaError("NO_VIDEO", f"{action.type}: this input has no pictures")
        o = self.options
        limits = (
            o.max_frames_len,
            release_seconds(o.max_audio_len, o),
            release_seconds(o.max_clip_len, o),
        )
        error = release.check_action(
            action, duration=env.duration, fps=env.info.fps, has_audio=env.has_audio, limits=limits
        )
        return action, error

    def _feedback(
        self, chat: Context, turn: Turn, error: OtaError | None, percept: Percept | None, step: int
    ) -> None:
        """The environment's message for the next turn: percept or error, warnings, notice
        (the notice last, so it can go once a newer one is sent)."""
        gone = percept is not None or (error is not None and self.options.delete_media_on_error)
        self._retire(chat, step + 1, media=gone)
        trailer = []
        if turn.warnings and error is None:
            trailer.append(warning_text(turn.warnings))
        upcoming = Text(text=notice(step + 1, self.total, self.options))
        if percept is None:
            assert error is not None
            texts = [error_text(error, self.options), *trailer]
            parts: list[Content] = [Text(text=t) for t in texts]
            self.run_.add(chat, Message(role="user", content=[*parts, upcoming]))
            self.notice_at = len(chat.messages) - 1
            return
        parts = [Text(text=percept.label), *percept.parts]
        parts += [Text(text=t) for t in trailer]
        self.run_.add(chat, Message(role="user", content=[*parts, upcoming]))
        self.notice_at = len(chat.messages) - 1
        self.pending = (self.notice_at, placeholder_message(percept, trailer))

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


def _answer_form(content: str, kind: str) -> OtaError | None:
    """omnilab's check of an answer's form (ANSWER_FORMAT): a TR answer holds at least one
    [start, end] pair of numbers, a NUM/SIZE answer a number."""
    needed = {"TR": 2, "NUM": 1, "SIZE": 1}.get(kind)
    if needed is None or len(NUMBER.findall(content)) >= needed:
        return None
    wanted = omniagent_answer_format(kind) or "a number"
    return OtaError(
        "ANSWER_FORMAT",
        f"a {kind} answer must be {wanted[0].lower()}{wanted[1:]} Got {content[:80]!r}",
    )
