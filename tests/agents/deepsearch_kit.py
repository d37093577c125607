"""Helpers of the deepsearch tests: small local text/image/video indexes and a run helper."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agentkit import Run

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.agents.task_info import TaskInfo
from omnilab.inputs import InputSet
from omnilab.media.synth import make_audio, make_image, make_video
from omnilab.models.model import Model
from omnilab.models.providers.scripted import OutputStep
from omnilab.models.types import Message, ModelOutput, ToolCall
from omnilab.tools.mediasearch import build_media_index
from omnilab.tools.web.index import build_index
from omnilab.trajectory import Event, TrajectoryWriter, read_trajectory


def search(name: str, *queries: str) -> OutputStep:
    """One reply calling search tool ``name`` with ``queries`` as its query_list."""
    call = ToolCall(name=name, arguments={"query_list": list(queries)})
    message = Message.assistant("<think>search</think>", tool_calls=[call])
    return OutputStep(output=ModelOutput(message=message, finish_reason="tool_calls"))


def many(*pairs: tuple[str, str]) -> OutputStep:
    """One reply with several search calls (one query each)."""
    calls = [ToolCall(name=n, arguments={"query_list": [q]}) for n, q in pairs]
    message = Message.assistant("two at once", tool_calls=calls)
    return OutputStep(output=ModelOutput(message=message, finish_reason="tool_calls"))


def build_indexes(root: Path) -> Path:
    """``root/index/{text,image,video}`` over a tiny generated corpus; returns ``root/index``."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "lighthouse.md").write_text(
        "# Cape Lumen lighthouse\n\nThe Cape Lumen lighthouse foghorn sounds every 30 seconds. "
        "The lighthouse was built in 1881 in the town of Port Ardent.\n",
        encoding="utf-8",
    )
    (docs / "bridge.md").write_text(
        "# Old bascule bridge\n\nThe bridge opens twice a day for tall ships.\n", encoding="utf-8"
    )
    images = root / "images"
    images.mkdir()
    make_image(images / "red_lighthouse.png", index=1)
    (images / "red_lighthouse.json").write_text(
        json.dumps({"title": "Cape Lumen lighthouse", "caption": "a red and white striped tower"}),
        encoding="utf-8",
    )
    make_image(images / "harbour_crane.png", index=2)
    (images / "harbour_crane.txt").write_text("a yellow crane in Port Ardent harbour", "utf-8")
    videos = root / "videos"
    videos.mkdir()
    make_video(videos / "foghorn_test.mp4", duration=2.0, audio=False, text="FOGHORN")
    (videos / "foghorn_test.json").write_text(
        json.dumps({"title": "Foghorn test at Cape Lumen", "description": "keepers sound it"}),
        encoding="utf-8",
    )
    index = root / "index"
    build_index(docs, index / "text")
    build_media_index("image", images, index / "image", ocr=False)
    build_media_index("video", videos, index / "video", digest=False)
    return index


def clip(root: Path) -> Path:
    """A short generated audio clip (a tone sequence)."""
    return make_audio(root / "clip.wav", duration=1.0, sample_rate=16_000)


def run_deepsearch(
    model: Model,
    files: list[Path],
    question: str,
    workdir: Path,
    *,
    budgets: Budgets | None = None,
    tools: list[str] | None = None,
    category: str | None = None,
    **options: Any,
) -> Run:
    """Run the deepsearch agent once and read its trajectory back (``category``: the task's,
    ``video/...`` for a video search task)."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"run{len(list(workdir.glob('run*.jsonl')))}.jsonl"
    live: list[Event] = []
    task = AgentTask(
        id="t",
        question=question,
        inputs=list(InputSet.from_paths(files)),
        metadata=TaskInfo(category=category),
    )
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model,
            roles={},
            tools=tools,
            budgets=budgets or Budgets(),
            workspace=workdir / "ws",
            trajectory=writer,
            on_event=live.append,
        )
        returned = asyncio.run(get_agent("deepsearch", **options).run(task, ctx))
    return Run(returned, read_trajectory(path), live, workdir / "ws")
