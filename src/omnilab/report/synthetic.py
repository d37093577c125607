"""A run folder made up on the spot, for the report's tests, benchmark and screenshots.

:func:`write_synthetic_run` writes what ``omnilab eval`` would: ``run.json``,
``results.jsonl``, one trajectory per task (a system prompt, a question with an image, a
reasoning reply calling ``read_video``, a result with frames and an audio segment, a note, a
purge of the frames, a perception side call, the answer, a step score) and the frames in each
task's ``workspaces/<id>/perception/``. Verdicts, levels, categories, errors and timings vary
with the task number, so every chart and filter has something to show. One task's tool result
holds a hostile web page (``<script>``), which a report must show as text.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image as PILImage

from omnilab.bench.results import TaskResult, write_results
from omnilab.bench.run_dir import RunConfig, RunDir
from omnilab.bench.scoring.base import JudgeCall, Score
from omnilab.bench.task import TaskMetadata
from omnilab.content import Audio, Content, Image, Text, Video
from omnilab.inputs import InputFile
from omnilab.media import synth
from omnilab.models.events import CallInput, ModelCallEvent, summarize_input
from omnilab.models.types import Message, ModelOutput, ToolCall, Usage
from omnilab.tools.base import ToolError, ToolResult
from omnilab.trajectory import (
    AnswerEvent,
    ContextEdit,
    MessageAdded,
    RunEnd,
    RunStart,
    StepNote,
    StepScore,
    ToolResultEvent,
    TrajectoryWriter,
)

__all__ = ["HOSTILE", "LEVELS", "write_synthetic_run"]

LEVELS = ("Easy", "Medium", "Hard")
CATEGORIES = ("Art", "Sports", "Science", "Travel")
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="alert(1)">'
"""Markup a model reply and a tool result of task 0 carry; it must render as text."""


def _state(i: int) -> tuple[bool | None, str | None]:
    """(verdict, error kind) of task ``i``: every 7th fails, every 11th is undecided."""
    if i % 7 == 6:
        return None, "timeout"
    if i % 11 == 10:
        return None, None
    return i % 3 != 2, None


def write_synthetic_run(
    folder: Path,
    *,
    tasks: int = 12,
    frames: int = 2,
    model: str = "scripted:synthetic",
    seed: int = 0,
) -> Path:
    """Write a run of ``tasks`` tasks into ``folder`` (each with ``frames`` frames of its own);
    returns ``folder``. ``seed`` shifts which tasks are right (for a second run to compare)."""
    run = RunDir(folder)
    media = folder / "_inputs"
    media.mkdir(parents=True, exist_ok=True)
    image, audio, video = media / "photo.png", media / "voice.wav", media / "clip.mp4"
    if not image.exists():
        synth.make_image(image, size=(320, 240), text="photo")
        synth.make_audio(audio, duration=2.0, sample_rate=16_000)
        synth.make_video(video, duration=1.0, size=(160, 120), fps=10)
    run.write_config(
        RunConfig(
            dataset="omnigaia",
            data=media / "tasks.json",
            agent="tir",
            model=model,
            scorer="omnigaia",
        )
    )
    results = []
    for i in range(tasks):
        verdict, error = _state(i + seed)
        results.append(_task(run, i, verdict, error, frames, (image, audio, video)))
    write_results(run.results_file, results)
    return folder


def _task(
    run: RunDir,
    i: int,
    verdict: bool | None,
    error: str | None,
    frames: int,
    inputs: tuple[Path, Path, Path],
) -> TaskResult:
    task_id = f"task-{i:04d}"
    image, audio, video = inputs
    perception = run.workspace(task_id) / "perception"
    perception.mkdir(parents=True, exist_ok=True)
    shots = []
    for k in range(frames):
        shot = perception / f"frame_{k}.jpg"
        PILImage.new("RGB", (480, 270), ((i * 37) % 256, (k * 90) % 256, 120)).save(shot)
        shots.append(shot)
    hostile = i == 0
    question = f"What colour is the object in clip {i}?" + (f" {HOSTILE}" if hostile else "")
    files = [
        InputFile(id="image_1", kind="image", path=image, given=image.name),
        InputFile(id="audio_1", kind="audio", path=audio, given=audio.name),
        InputFile(id="video_1", kind="video", path=video, given=video.name),
    ]
    answer = "blue" if verdict else "red"
    turns = 2 + i % 3
    tools = {"read_video": turns - 1, "read_audio": i % 2}
    with TrajectoryWriter(run.trajectory_file(task_id)) as writer:
        ctx = "ctx-agent"
        writer.emit(
            RunStart(
                run_id=writer.run_id,
                task_id=task_id,
                question=question,
                inputs=files,
                agent="tir",
                models={"agent": "scripted:synthetic"},
            )
        )
        messages = [
            Message.system("You are an omni-modal agent. Answer in <answer></answer>."),
            Message.user(question, Image(path=image)),
        ]
        for m in messages:
            writer.emit(MessageAdded(message=m, context_id=ctx))
        for turn in range(turns - 1):
            call = ToolCall(
                id=f"call_{turn}",
                name="read_video",
                arguments={"video_id": "video_1", "t_start": turn, "t_end": turn + 1},
            )
            text = "Let me look at the clip." + (f" {HOSTILE}" if hostile else "")
            reply = Message.assistant(text, tool_calls=[call])
            writer.emit(_call(messages, reply, ctx, f"I should watch second {turn}.", 0.4 + i % 5))
            messages = [*messages, reply]
            parts: list[Content] = [Text(text=f"video_1 from {turn} s to {turn + 1} s:")]
            for k, shot in enumerate(shots):
                parts += [
                    Text(text=f"frame at {turn + k / max(frames, 1):.2f} s"),
                    Image(path=shot),
                ]
            parts.append(Audio(path=audio, start=float(turn), end=float(turn + 1)))
            if hostile:
                parts.append(Text(text=f"web page: {HOSTILE}"))
            result = ToolResult(content=parts)
            writer.emit(
                ToolResultEvent(
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    result=result,
                    duration_s=0.05,
                    context_id=ctx,
                )
            )
            messages = [*messages, Message(role="tool", content=parts, tool_call_id=call.id)]
            writer.emit(
                StepNote(
                    label="turn",
                    text=f"turn {turn}: confidence {0.5 + turn / 10:.1f}",
                    data={
                        "confidence": 0.5 + turn / 10,
                        "left": {"read_video": 3 - turn},
                        "total": 9,
                    },
                    context_id=ctx,
                )
            )
            if turn == 0 and turns > 2:
                purged = Message(
                    role="tool",
                    content=[Text(text="[frames purged to save context]")],
                    tool_call_id=call.id,
                )
                start = len(messages) - 1
                writer.emit(
                    ContextEdit(
                        start=start,
                        end=start + 1,
                        replacement=[purged],
                        reason="old frames purged",
                        context_id=ctx,
                    )
                )
                messages = [*messages[:start], purged]
        if i % 2:
            bad = ToolResult(
                error=ToolError(code="TS_OOB", message="t_end 99 is past the end (1.0 s)")
            )
            writer.emit(
                ToolResultEvent(
                    call_id="call_x",
                    name="read_audio",
                    arguments={"audio_id": "audio_1", "t_start": 0, "t_end": 99},
                    result=bad,
                    context_id=ctx,
                )
            )
            side = [Message.user("Describe this clip.", Video(path=video, start=0.0, end=1.0))]
            writer.emit(
                _call(
                    [],
                    Message.assistant("A red ball rolls."),
                    "ctx-perception",
                    None,
                    0.2,
                    sent=side,
                    role="perception",
                )
            )
        final = Message.assistant(f"<answer>{answer}</answer>")
        last = _call(messages, final, ctx, "I have seen enough.", 0.3)
        writer.emit(last)
        writer.emit(StepScore(target_id=last.id, value=1.0 if verdict else -1.0, context_id=ctx))
        if error is None:
            writer.emit(AnswerEvent(text=final.text, answer=answer, source="tag", context_id=ctx))
        writer.emit(
            RunEnd(
                status="error" if error else "answered",
                usage=Usage(prompt_tokens=900 * turns, completion_tokens=60 * turns),
                wall_s=1.0 + (i % 9) * 0.7,
                turns=turns,
            )
        )
    metadata = TaskMetadata(level=LEVELS[i % 3], category=CATEGORIES[i % 4])
    usage = Usage(prompt_tokens=900 * turns + 13 * i, completion_tokens=60 * turns)
    base = {
        "task_id": task_id,
        "dataset": "omnigaia",
        "metadata": metadata,
        "modalities": "audio+image+video",
        "tool_calls": tools,
        "usage": usage,
        "wall_s": 1.0 + (i % 9) * 0.7,
        "model_calls": turns,
        "cost_usd": 0.001 * turns,
    }
    if error is not None:
        return TaskResult.model_validate(
            {**base, "error": "the task ran past 600 s", "error_kind": error}
        )
    judge = JudgeCall(
        judge="scripted:judge",
        replies=["Correct" if verdict else "Incorrect"],
        verdict=None if verdict is None else ("correct" if verdict else "incorrect"),
    )
    score = Score(
        scorer="omnigaia",
        value=1.0 if verdict else 0.0,
        correct=verdict,
        exact_match=bool(verdict),
        extracted=answer,
        judge_input=answer,
        judges=[judge] if verdict is not None else [],
        error=None if verdict is not None else "judge gave no verdict",
    )
    return TaskResult.model_validate(
        {**base, "prediction": final.text, "extracted": answer, "score": score}
    )


def _call(
    before: list[Message],
    reply: Message,
    context: str,
    reasoning: str | None,
    latency: float,
    *,
    sent: list[Message] | None = None,
    role: str = "agent",
) -> ModelCallEvent:
    messages = sent if sent is not None else before
    return ModelCallEvent(
        model="scripted:synthetic",
        input=summarize_input(messages, []),
        sent=CallInput(messages=messages),
        role=role,
        context_id=context,
        output=ModelOutput(
            message=reply, reasoning=reasoning, usage=Usage(prompt_tokens=900, completion_tokens=60)
        ),
        usage=Usage(prompt_tokens=900, completion_tokens=60),
        latency_s=latency,
        attempts=1,
    )
