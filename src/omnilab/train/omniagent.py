"""OmniAgent's own training files: per-step SFT rows from runs, and RL prompt rows from tasks.

Field names, types and nesting follow the release (github.com/HarryHsing/OmniAgent,
``data/example_train_sft.jsonl``, ``data/example_train_rl.jsonl`` and
``inference/results_final_v1_rl/filter_and_export_rl.py``), including its quirks: ``done`` and
``is_action_valid`` are the strings ``"True"``/``"False"``, ``env_config.actual_max_frames`` is a
string, a TR ``answer`` is a list of spans, ``options`` is ``null`` but for MCQ, ``mode`` is
``OmniAgent`` (the name ``video_env.py``'s prompt table takes) and an RL row's ``prompt`` is
``[{"content": "", "role": "user"}]`` (OmniAgent's environment builds the prompt from the other
fields).

Which rows: the release's SFT filter (``inference/results_final_v1/filter_and_export_sft.py``)
keeps, per question, the last trajectory that won (else none), drops a trajectory of more than 50
steps, and drops every step the environment refused (:func:`~.validity.refused_calls`);
:func:`release_winners` and ``omniagent_step_rows(valid_only=True)`` do the same.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from omnilab.bench.task import Task
from omnilab.content import Text
from omnilab.models import Message
from omnilab.train.chat_formats import media_path
from omnilab.train.examples import context_calls
from omnilab.train.runs import RunRecord
from omnilab.train.validity import refused_calls
from omnilab.trajectory import StepNote, StepScore

__all__ = [
    "RELEASE_MAX_STEPS",
    "VideoMeta",
    "omniagent_rl_row",
    "omniagent_step_rows",
    "release_winners",
    "task_fields",
    "video_meta",
]

RELEASE_MAX_STEPS = 50
"""``filter_and_export_sft.py --max_steps`` (its default): a longer winning trajectory is dropped."""

MODE = "OmniAgent"
"""``video_env.py``'s ``mode``: the key of its prompt-builder table (``{"OmniAgent": ...}``)."""

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class VideoMeta:
    """The task's video as the rows describe it."""

    video: str | None
    """As the dataset file names it (relative to the media root), else the file's path (its
    URL without query or user info, for a file at a URL)."""
    fps: float
    duration_seconds: float
    has_audio: bool


Probe = Callable[[Task], VideoMeta]


def video_meta(task: Task) -> VideoMeta:
    """Probe the task's first video (or audio) file; zeros when it has none."""
    from omnilab.media.probe import probe

    files = [f for f in task.files if f.kind == "video"] or [
        f for f in task.files if f.kind == "audio"
    ]
    if not files:
        return VideoMeta(video=None, fps=0.0, duration_seconds=0.0, has_audio=False)
    info = probe(files[0].path)  # MediaError (one line) when it is missing or unreadable
    named = task.original.get("video") or task.original.get("video_path")
    return VideoMeta(
        video=named if isinstance(named, str) else (files[0].url or str(files[0].path)),
        fps=float(info.fps or 0.0),
        duration_seconds=float(info.duration or 0.0),
        has_audio=info.has_audio,
    )


def task_fields(task: Task) -> JsonDict:
    """``question_type``, ``question``, ``answer`` and ``options`` as OmniAgent's files hold them:
    the dataset's own values where it has them (``MCQ_Holmes``, ``["A. ...", ...]``)."""
    original = task.original
    qtype = original.get("question_type") or task.metadata.task_type or "FF"
    answer = original.get("answer", task.answers.label)
    options = original.get("options")
    if not isinstance(options, list):
        given = task.metadata.options or {}
        options = [f"{letter}. {text}" for letter, text in given.items()]
    return {
        "question_type": str(qtype),
        "question": task.question,
        "answer": answer if isinstance(answer, str) else json.dumps(answer),
        "options": options,
    }


def sft_fields(fields: JsonDict) -> JsonDict:
    """:func:`task_fields` as the release's SFT rows hold them (its environment's sample): a TR
    answer as its list of spans, ``options`` ``null`` but for MCQ. (Its RL file keeps the TR
    answer as text, as :func:`omniagent_rl_row` does.)"""
    base = str(fields["question_type"]).split("_", 1)[0].upper()
    out = dict(fields)
    if base == "TR":
        with contextlib.suppress(ValueError):
            out["answer"] = json.loads(str(fields["answer"]))
    if base != "MCQ":
        out["options"] = None
    return out


# --- SFT: one row per model call ------------------------------------------------------------------


def _parts(message: Message) -> JsonDict:
    content: list[JsonDict] = []
    for part in message.content:
        if isinstance(part, Text):
            content.append({"type": "text", "text": part.text})
        else:
            # Qwen-style media parts, as the release writes them: {"type": "image", "image": path}
            content.append({"type": part.type, part.type: media_path(part.path)})
    row: JsonDict = {"role": message.role, "content": content}
    if message.tool_calls:  # never in an ota run; kept so a tool-calling agent's rows are whole
        row["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    return row


def _output_text(message: Message) -> str:
    text = message.text
    if message.tool_calls:
        calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
        text = f"{text}\n{json.dumps(calls)}" if text else json.dumps(calls)
    return text


def _notes(record: RunRecord) -> list[JsonDict]:
    return [e.data for e in record.trajectory.events if isinstance(e, StepNote)]


def release_winners(records: Iterable[RunRecord]) -> tuple[list[RunRecord], int]:
    """The rollouts the release's SFT filter keeps: per task, the last one judged correct, if
    it has at most :data:`RELEASE_MAX_STEPS` model calls; and how many rollouts were left out."""
    by_task: dict[str, list[RunRecord]] = {}
    for record in records:
        by_task.setdefault(record.task_id, []).append(record)
    kept: list[RunRecord] = []
    for group in by_task.values():
        won = [r for r in group if r.result.judged is True]
        if won and _calls(won[-1]) <= RELEASE_MAX_STEPS:
            kept.append(won[-1])
    return kept, sum(len(g) for g in by_task.values()) - len(kept)


def _calls(record: RunRecord) -> int:
    return sum(len(c) for c in context_calls(record.trajectory.contexts()).values())


def omniagent_step_rows(
    record: RunRecord, probe: Probe = video_meta, *, valid_only: bool = False
) -> list[JsonDict]:
    """Every model call of the rollout's main loop as one row of OmniAgent's SFT file;
    ``valid_only``: not the calls the environment refused."""
    traj = record.trajectory
    start = traj.run_start
    config: JsonDict = dict(start.config) if start is not None else {}
    task = record.task
    meta = probe(task) if task is not None else VideoMeta(None, 0.0, 0.0, False)
    fields = (
        sft_fields(task_fields(task))
        if task is not None
        else {
            "question_type": "FF",
            "question": start.question if start is not None else "",
            "answer": "",
            "options": None,
        }
    )
    scores = {e.target_id: e.value for e in traj.events if isinstance(e, StepScore)}
    refused = refused_calls(traj) if valid_only else set()
    notes = _notes(record)
    won = record.result.judged is True
    max_steps = int(
        config.get("turn_limit") or config.get("max_steps") or record.config.budgets.max_turns or 0
    )
    env_config = {
        "actual_max_steps": max_steps,
        "actual_max_frames": str(config.get("max_frames_len", "")),
        "actual_max_audio": float(config.get("max_audio_len") or 0.0),
        "actual_max_clip": float(config.get("max_clip_len") or 0.0),
        "video_duration": meta.duration_seconds,
    }
    limit = int(config.get("max_prompt_tokens") or record.config.budgets.max_tokens or 0)
    rows: list[JsonDict] = []
    for calls in context_calls(traj.contexts()).values():
        completion = 0
        for i, ctx in enumerate(calls):
            assert ctx.output is not None  # context_calls keeps answered calls only
            last = i == len(calls) - 1
            reward = scores.get(ctx.call.id, record.reward if last else 0.0)
            note = notes[i] if len(notes) == len(calls) else {}
            completion += ctx.output.usage.completion_tokens
            if ctx.call.id in refused:
                continue
            rows.append(
                {
                    "question_id": record.task_id,
                    "traj_id": traj.header.run_id,
                    "step": i + 1,
                    "raw_input": [_parts(m) for m in ctx.messages],
                    "output": _output_text(ctx.output.message),
                    "step_reward": float(reward),
                    "done": str(last),
                    "extra_info": {
                        "video": meta.video,
                        "fps": meta.fps,
                        "duration_seconds": meta.duration_seconds,
                        "has_audio": meta.has_audio,
                        **fields,
                        "mode": MODE,
                        "max_steps": max_steps,
                        "won": won and last,
                        "is_action_valid": str(note.get("error") is None),
                        "reward": float(reward),
                        "token_stats": {
                            "final_history_tokens": ctx.output.usage.prompt_tokens,
                            "total_assistant_tokens": completion,
                            "avg_assistant_tokens": completion / (i + 1),
                            "max_prompt_limit": limit,
                        },
                        "env_config": env_config,
                    },
                    "episode_reward": record.reward,
                }
            )
    return rows


# --- RL: one prompt row per task --------------------------------------------------------------------


def omniagent_rl_row(task: Task, meta: VideoMeta, *, index: int, data_source: str) -> JsonDict:
    """One row of OmniAgent's RL file (``data/example_train_rl.jsonl``)."""
    fields = task_fields(task)
    return {
        "prompt": [{"content": "", "role": "user"}],
        "question_type": fields["question_type"],
        "question": fields["question"],
        "answer": fields["answer"],
        "options": fields["options"],
        "video": meta.video,
        "fps": meta.fps,
        "duration_seconds": meta.duration_seconds,
        "has_audio": meta.has_audio,
        "data_source": data_source,
        "ability": "agent",
        "extra_info": {"task_id": task.id, "index": index},
    }


def probe_all(
    tasks: Iterable[Task], on_done: Callable[[int], None] | None = None
) -> list[VideoMeta]:
    """:func:`video_meta` of every task, each file probed once; ``on_done(n)`` after each."""
    seen: dict[str, VideoMeta] = {}
    out: list[VideoMeta] = []
    for n, task in enumerate(tasks, 1):
        key = "|".join(str(f.path) for f in task.files)
        found = seen.get(key)
        if found is None or not key:
            found = video_meta(task)
            seen[key] = found
        named = task.original.get("video") or task.original.get("video_path")
        if isinstance(named, str) and named != found.video:
            found = VideoMeta(named, found.fps, found.duration_seconds, found.has_audio)
        out.append(found)
        if on_done is not None:
            on_done(n)
    return out
