"""The ``omni-deepsearch-paper`` preset: Appendix E's sampling on the wire and Table 3's budget
read per task (text/image-text tasks get the first number, video tasks the second, shared by
every search tool), scored by a three-judge majority vote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.agents import AgentTask, TaskInfo, get_agent
from omnilab.bench.protocols import get_protocol
from omnilab.cli.main import app
from omnilab.media.synth import make_audio
from omnilab.models.fake_server import FakeOpenAIServer, reply_tool_calls
from omnilab.tools.web.index import build_index

runner = CliRunner()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A two-task dataset (a video task and a single-audio text task) and a text index."""
    root = tmp_path_factory.mktemp("deepsearch")
    docs = root / "docs"
    docs.mkdir()
    (docs / "lighthouse.md").write_text(
        "# Cape Lumen lighthouse\n\nThe lighthouse foghorn sounds every 30 seconds.\n", "utf-8"
    )
    build_index(docs, root / "index" / "text")
    clip = make_audio(root / "clip.wav", duration=1.0, sample_rate=16_000)
    items = [
        {"id": "v", "audio": str(clip), "retrieval_modality": "video", "question": "Which tower?",
         "answer": "Cape Lumen"},
        {"id": "t", "audio": str(clip), "retrieval_modality": "single", "question": "How often?",
         "answer": "every 30 seconds"},
    ]  # fmt: skip
    data = root / "tasks.jsonl"
    data.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    return data, root / "index"


def _eval(tmp: Path, world: tuple[Path, Path], *extra: str) -> list[dict[str, Any]]:
    """Run both tasks with a model that only ever searches; the requests it got."""
    data, index = world
    judge = tmp / "judge.json"
    judge.parent.mkdir(parents=True, exist_ok=True)
    judge.write_text(json.dumps({"outputs": ["Correct"], "repeat": True}), encoding="utf-8")
    search = reply_tool_calls(("text_search", {"query_list": ["Cape Lumen lighthouse"]}))
    with FakeOpenAIServer(default=search) as fake:
        done = runner.invoke(
            app,
            [
                "eval", "omni-deepsearch", "--data", str(data), "--agent", "deepsearch",
                "--model", f"vllm:qwen-omni@{fake.base_url}", "-O", f"index_dir={index}",
                *(a for _ in range(3) for a in ("--judge", f"scripted:{judge}")),
                "-O", "budget=[2, 1]", "--max-turns", "5", "-c", "1", "--out", str(tmp / "run"),
                "--no-cache", "--no-progress", *extra,
            ],
        )  # fmt: skip
        # 3: ran, no task answered (the preset ends a run whose budget is spent without one)
        assert done.exit_code in (0, 3), (done.output, done.exception)
        return [fake.body(i) for i in range(len(fake.chat_requests))]


def test_the_preset_loads_and_its_options_reach_the_agent() -> None:
    preset = get_protocol("omni-deepsearch-paper")
    assert "Omni-DeepSearch" in preset.source and preset.agent == "deepsearch" and preset.gaps
    assert preset.scorer == "majority_vote"
    agent = get_agent("deepsearch", **preset.agent_options)
    assert agent.options.budget == (10, 3) and agent.options.budget_scope == "task"  # type: ignore[attr-defined]
    assert agent.options.on_exhausted == "last_search"  # type: ignore[attr-defined]
    assert agent.options.repeat_notice is False  # type: ignore[attr-defined]
    video = AgentTask(id="v", question="q", metadata=TaskInfo(category="video/music"))
    text = AgentTask(id="t", question="q", metadata=TaskInfo(category="image/speech"))
    assert agent.task_budget(video) == 3 and agent.task_budget(text) == 10  # type: ignore[attr-defined]
    # Table 3's rule is also omnilab's default; the per-tool budget is an option.
    assert get_agent("deepsearch").task_budget(video) == 3  # type: ignore[attr-defined]
    assert get_agent("deepsearch", budget_scope="tool").task_budget(video) is None  # type: ignore[attr-defined]


def test_every_gap_of_the_preset_is_named_with_its_reason() -> None:
    preset = get_protocol("omni-deepsearch-paper")
    assert preset.open_gaps == [] and all(g.reason for g in preset.gaps)
    findings = {g.finding: g for g in preset.gaps}
    assert "A.4" in findings["malformed tool calls"].reference
    assert "C.4 and C.5" in findings["tool descriptions"].reference
    shown = runner.invoke(app, ["protocols"], env={"COLUMNS": "300"})
    line = next(x for x in shown.output.splitlines() if "omni-deepsearch" in x and "datasets" in x)
    assert "not reproduced yet" not in line and "6 named divergences" in line


def test_sampling_and_the_task_budget_on_the_wire(tmp_path: Path, world: tuple[Path, Path]) -> None:
    bodies = _eval(tmp_path / "preset", world, "--protocol", "omni-deepsearch-paper")
    assert all((b["temperature"], b["max_tokens"]) == (0.0, 16384) for b in bodies)
    # video task: 1 search of the shared budget; text task: 2 searches. Each run ends when
    # its last search has run (Appendix A: no further model call, issue 43 point 30). No
    # forced final.
    assert len(bodies) == 3 and not [b for b in bodies if b.get("tool_choice") == "none"]
    # omnilab's default on exhaustion: a final call with tools off after the shared budget
    bodies = _eval(
        tmp_path / "final", world, "--protocol", "omni-deepsearch-paper",
        "-O", "on_exhausted=final_answer",
    )  # fmt: skip
    finals = [b for b in bodies if b.get("tool_choice") == "none"]
    assert len(bodies) == 5 and len(finals) == 2
    # a budget per tool: text_search is refused after 2, but image and video searches are
    # left, so both tasks run to --max-turns 5 and then the final call
    bodies = _eval(
        tmp_path / "tool", world, "--protocol", "omni-deepsearch-paper",
        "-O", "budget_scope=tool", "-O", "on_exhausted=final_answer",
    )  # fmt: skip
    assert len(bodies) == 12
