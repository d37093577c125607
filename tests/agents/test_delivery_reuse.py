"""Prepared media reused across runs (issue 37): a second run of the OmniGAIA preset on the
same video decodes nothing and sends the same request; keyframe sampling is opt-in."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.bench.protocols import get_protocol
from omnilab.cli.main import app
from omnilab.inputs import InputSet
from omnilab.media import audio as audio_module
from omnilab.media import video as video_module
from omnilab.models import get_model
from omnilab.models.fake_server import FakeOpenAIServer, RecordedRequest, reply_text
from omnilab.trajectory import TrajectoryWriter

IMAGE_AUDIO = "gemini-2.0-flash"


def _run(folder: Path, video: Path, **options: Any) -> RecordedRequest:
    with FakeOpenAIServer() as server:
        server.push(reply_text("<answer>a</answer>"))
        task = AgentTask(
            id="t", question="What happens?", inputs=list(InputSet.from_paths([video]))
        )
        with TrajectoryWriter(folder / "run.jsonl") as writer:
            ctx = AgentContext(
                model=get_model(f"vllm:{IMAGE_AUDIO}@{server.base_url}"),
                roles={},
                tools=None,
                budgets=Budgets(max_turns=4),
                workspace=folder / "ws",
                trajectory=writer,
            )
            assert asyncio.run(get_agent("tir", **options).run(task, ctx)).status == "answered"
        return server.chat_requests[0]


@pytest.fixture()
def counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often frames were decoded and sound was decoded (by either sound loop: the bulk one
    for a soundtrack from its start, the per-packet one otherwise)."""
    seen = {"frames": 0, "audio": 0}
    real_extract, real_iter = video_module._extract, audio_module.iter_audio
    real_bulk = audio_module.iter_bulk

    def extract(*args: Any, **kwargs: Any) -> Any:
        seen["frames"] += 1
        return real_extract(*args, **kwargs)

    def iter_audio(*args: Any, **kwargs: Any) -> Any:
        seen["audio"] += 1
        return real_iter(*args, **kwargs)

    def iter_bulk(*args: Any, **kwargs: Any) -> Any:
        seen["audio"] += 1
        return real_bulk(*args, **kwargs)

    monkeypatch.setattr(video_module, "_extract", extract)
    monkeypatch.setattr(audio_module, "iter_audio", iter_audio)
    monkeypatch.setattr(audio_module, "iter_bulk", iter_bulk)
    return seen


def test_a_second_run_reuses_the_prepared_frames_and_soundtrack(
    tmp_path: Path, video: Path, counts: dict[str, int]
) -> None:
    options = {**get_protocol("omnigaia-paper").agent_options, "rules": "omnilab"}
    first = _run(tmp_path / "run1", video, **options)
    assert counts == {"frames": 1, "audio": 1}
    second = _run(tmp_path / "run2", video, **options)
    assert counts == {"frames": 1, "audio": 1}  # nothing decoded again
    assert second.raw == first.raw
    # The run folder has its own copies of the frames: never the cache's files themselves
    # (code in the workspace must not be able to write into a shared entry).
    views = sorted((tmp_path / "run2" / "ws" / "views").glob("*.jpg"))
    assert len(views) == 8  # 4 s at 2 fps
    cached = {p.stat().st_ino for p in (tmp_path / "cache" / "media").rglob("*.jpg")}
    assert len(cached) == 8
    assert all(v.stat().st_nlink == 1 and v.stat().st_ino not in cached for v in views)


def test_keyframe_sampling_sends_keyframes_at_or_before_each_time(
    tmp_path: Path, video: Path
) -> None:
    options = {**get_protocol("omnigaia-paper").agent_options, "rules": "omnilab"}
    delivery = {**options["delivery"], "frames_sampling": "keyframe"}
    body = json.loads(_run(tmp_path, video, **{**options, "delivery": delivery}).raw)
    labels = [
        float(p["text"].removeprefix("t=").removesuffix(" s"))
        for p in body["messages"][1]["content"]
        if p["type"] == "text" and p["text"].startswith("t=")
    ]
    assert len(labels) == 8
    assert set(labels) <= {0.0, 1.0, 2.0, 3.0}  # the fixture video's keyframes (1 s GOP)


def test_cache_command_shows_and_clears(video: Path) -> None:
    from omnilab.media.prepared import jpeg_frames

    jpeg_frames(video, 0.0, None, num=3, max_edge=64)
    runner = CliRunner()
    shown = runner.invoke(app, ["cache", "show", "--json"])
    assert shown.exit_code == 0, shown.output
    stats = json.loads(shown.output)
    assert stats["entries"] == 4  # three frames and their manifest
    assert stats["bytes"] > 0 and stats["max_bytes"] == 2 * 1024**3
    text = runner.invoke(app, ["cache", "show"])
    assert "entries:     4" in text.output
    refused = runner.invoke(app, ["cache", "clear"], input="n\n")
    assert refused.exit_code == 1
    assert json.loads(runner.invoke(app, ["cache", "show", "--json"]).output)["entries"] == 4
    cleared = runner.invoke(app, ["cache", "clear", "--yes"])
    assert cleared.exit_code == 0 and "freed" in cleared.output
    assert json.loads(runner.invoke(app, ["cache", "show", "--json"]).output)["entries"] == 0
    # Made again when needed.
    assert len(jpeg_frames(video, 0.0, None, num=3, max_edge=64)) == 3
