"""RL prompt rows from a dataset (not a run): OmniAgent's RL file and verl's dataset convention.

verl's ``RLHFDataset`` reads parquet rows with ``data_source`` (which reward function scores the
row), ``prompt`` (the chat the policy starts from), ``ability``, ``reward_model: {style: rule,
ground_truth}`` and ``extra_info``; multimodal rows add ``images`` / ``videos`` (and ``audios``) with
``<image>`` / ``<video>`` / ``<audio>`` markers in the prompt text, paths made absolute (a file at
a URL: that URL, without query or user info). Fps, duration and sound are probed from the files
(:func:`omnilab.train.omniagent.probe_all`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from omnilab.bench.task import Task, TaskFile
from omnilab.train.omniagent import VideoMeta, omniagent_rl_row, probe_all, task_fields

__all__ = ["RL_FORMATS", "RlFormat", "rl_rows", "verl_row"]

RlFormat = Literal["verl", "omniagent"]
RL_FORMATS: tuple[RlFormat, ...] = ("verl", "omniagent")

JsonDict = dict[str, Any]


def verl_row(task: Task, meta: VideoMeta, *, index: int, data_source: str) -> JsonDict:
    """One verl row: the question as the agents ask it (options and answer format included)."""
    from omnilab.agents.question import question_text
    from omnilab.bench.agent_task import agent_task

    images = [_where(f) for f in task.files if f.kind == "image"]
    videos = [_where(f) for f in task.files if f.kind == "video"]
    audios = [_where(f) for f in task.files if f.kind == "audio"]
    markers = "".join(
        f"<{kind}>" * len(paths)
        for kind, paths in (("image", images), ("video", videos), ("audio", audios))
    )
    asked = agent_task(task)
    text = question_text(asked)
    fields = task_fields(task)
    # verl's ability names the kind of problem: the question's base type where the dataset has
    # one (MCQ_Holmes -> mcq), else the dataset
    qtype = asked.metadata.question_type
    ability = qtype.split("_", 1)[0].lower() if qtype else task.dataset
    row: JsonDict = {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": f"{markers}{text}"}],
        "ability": ability,
        "reward_model": {"style": "rule", "ground_truth": task.answers.label},
        "extra_info": {
            "index": index,
            "task_id": task.id,
            "question": task.question,
            "question_type": fields["question_type"],
            "answers": list(task.answers.all),
            "options": fields["options"],
            # the probed file: an audio-only item's is its audio, not a video
            "video": meta.video if videos else None,
            "audio": meta.video if audios and not videos else None,
            "fps": meta.fps,
            "duration_seconds": meta.duration_seconds,
            "has_audio": meta.has_audio,
            "audios": audios,
        },
    }
    if images:
        row["images"] = images
    if videos:
        row["videos"] = videos
    if audios:
        row["audios"] = audios
    return row


def _where(f: TaskFile) -> str:
    """Where a row says the file is: its absolute path (a trainer started in another folder
    finds the same file), or for a file at a URL that URL without query or user info (the copy
    fetched to probe it lies in this machine's media cache, which evicts it and which other
    machines do not have)."""
    return f.url if f.url is not None else str(Path(f.path).resolve())


def rl_rows(
    tasks: Sequence[Task],
    fmt: RlFormat,
    *,
    data_source: str | None = None,
    on_probe: Callable[[int], None] | None = None,
) -> list[JsonDict]:
    """One prompt row per task. ``data_source`` defaults to ``agent`` for OmniAgent (its reward
    router's name) and to the dataset's name for verl."""
    metas = probe_all(tasks, on_probe)
    rows = []
    for index, (task, meta) in enumerate(zip(tasks, metas, strict=True)):
        if fmt == "omniagent":
            rows.append(
                omniagent_rl_row(task, meta, index=index, data_source=data_source or "agent")
            )
        else:
            rows.append(verl_row(task, meta, index=index, data_source=data_source or task.dataset))
    return rows
