"""Media in prompts, read on the wire of a local OpenAI-compatible server: no message ever holds
a host path (media are named by input id and time range), and each frame a tool returns is
labelled with its time right before its image."""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.inputs import InputFile, InputSet
from omnilab.models import get_model
from omnilab.models.fake_server import FakeOpenAIServer, reply_text, reply_tool_calls
from omnilab.trajectory import Trajectory, TrajectoryWriter

# A POSIX path of two or more parts that starts after a space, quote, bracket or line start.
_ABSOLUTE = re.compile(r"(?:^|[\s\"'(\[=,])(/[\w.-]+/[\w./-]+)")
OMNI = "Qwen2.5-Omni-7B"  # image, audio and video (capability families)
VISION = "llava-1.6"  # images only
TEXT = "plain-7b"  # text only


def wire_texts(body: dict[str, Any]) -> Iterator[str]:
    """Every text a request carries: message texts and tool descriptions (never media data)."""
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            yield content
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "text":
                yield part["text"]
    for spec in body.get("tools") or []:
        yield spec["function"]["description"]


def host_paths(server: FakeOpenAIServer, roots: list[Path]) -> list[str]:
    found = []
    for request in server.chat_requests:
        for text in wire_texts(request.body):
            found += [m for m in _ABSOLUTE.findall(text)]
            found += [str(r) for r in roots if str(r) in text]
    return found


@pytest.fixture()
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("The meeting is at noon.", encoding="utf-8")
    return path


def run(
    server: FakeOpenAIServer,
    model: str,
    files: list[Path],
    tmp_path: Path,
    *,
    tools: list[str] | None = None,
    perception: str | None = None,
    extra: tuple[InputFile, ...] = (),
    **options: object,
) -> Trajectory:
    agent_model = get_model(f"vllm:{model}@{server.base_url}")
    roles = {"perception": get_model(f"vllm:{perception}@{server.base_url}")} if perception else {}
    inputs = list(InputSet.from_paths(files))
    task = AgentTask(id="t", question="What happens?", inputs=[*inputs, *extra])
    with TrajectoryWriter(tmp_path / f"run-{len(server.requests)}.jsonl") as writer:
        ctx = AgentContext(
            model=agent_model,
            roles=roles,
            tools=tools,
            budgets=Budgets(max_turns=4),
            workspace=tmp_path / "ws",
            trajectory=writer,
        )
        return asyncio.run(get_agent("tir", **options).run(task, ctx))


READS = (
    ("read_video", {"video_id": "video_1", "t_start": 1, "t_end": 2}),
    ("read_audio", {"audio_id": "audio_1", "t_start": 0, "t_end": 2}),
    ("read_image", {"image_ids": ["image_1"], "crop_box": [0, 0, 100, 100]}),
)


@pytest.mark.parametrize(
    ("model", "mode", "tools", "calls", "perception"),
    [
        (
            OMNI,
            "native",
            ["read_video", "read_audio", "read_image", "code_executor"],
            (*READS, ("code_executor", {"code": "open('out.txt', 'w').write('x'); print(2 + 2)"})),
            None,
        ),
        (VISION, "active", None, READS, None),
        (TEXT, "evidence", None, READS, None),
        (
            TEXT,
            "tools",
            None,
            (
                ("vision_qa", {"question": "What?", "video_path": "video_1"}),
                ("audio_qa", {"question": "What?", "audio_path": "audio_1"}),
            ),
            OMNI,
        ),
        (VISION, "audio-as-tool", None, (), OMNI),
        (OMNI, "vision-as-tool", None, (), OMNI),
    ],
)
def test_no_message_holds_a_host_path(
    model: str,
    mode: str,
    tools: list[str] | None,
    calls: tuple[tuple[str, dict[str, object]], ...],
    perception: str | None,
    tmp_path: Path,
    video: Path,
    audio_file: Path,
    image_file: Path,
    text_file: Path,
) -> None:
    with FakeOpenAIServer() as server:
        if perception is not None:  # tools mode: the perception model answers each *_qa call
            server.push(reply_tool_calls(*calls), *(reply_text("A tone.") for _ in calls))
        elif calls:
            server.push(reply_tool_calls(*calls))
        server.push(reply_text("<answer>a tone</answer>"))
        trajectory = run(
            server,
            model,
            [video, audio_file, image_file, text_file],
            tmp_path,
            tools=tools,
            perception=perception,
            mode=mode,
        )
        assert trajectory.status == "answered", trajectory.events
        assert all(r.result.error is None for r in trajectory.tool_results)
        roots = [tmp_path, video.parent, Path(tempfile.gettempdir()) / "", Path.home()]
        assert len(server.chat_requests) >= 1 + bool(calls)
        assert host_paths(server, roots) == []
        first = server.body(0)["messages"][1]
        assert any("video_1" in t for t in wire_texts({"messages": [first]}))


def test_evidence_names_the_contact_sheet_by_no_path(tmp_path: Path, video: Path) -> None:
    with FakeOpenAIServer() as server:
        server.push(reply_text("<answer>a</answer>"))
        run(server, TEXT, [video], tmp_path, mode="evidence")
        first = "\n".join(wire_texts({"messages": server.body(0)["messages"][1:2]}))
    assert "## video_1 (video.mp4)" in first  # the digest was made, and names files by id
    assert "Contact sheet" not in first and ".png" not in first


def frame_turn(server: FakeOpenAIServer) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tool messages and the media turns that follow them in the second request."""
    messages = server.body(1)["messages"]
    tools = [m for m in messages if m["role"] == "tool"]
    after = messages[messages.index(tools[-1]) + 1 :]
    return tools, after


def test_active_frames_are_labelled_with_their_times_on_the_wire(
    tmp_path: Path, silent_video: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.push(
            reply_tool_calls(("read_video", {"video_id": "video_1", "t_start": 0, "t_end": 2})),
            reply_text("<answer>a</answer>"),
        )
        run(server, VISION, [silent_video], tmp_path, mode="active")
        (tool,), (media,) = frame_turn(server)
    assert media["role"] == "user"
    parts = media["content"]
    images = [i for i, p in enumerate(parts) if p["type"] == "image_url"]
    assert len(images) >= 2
    labels = [parts[i - 1].get("text", "") for i in images]
    times = [float(re.fullmatch(r"t=([\d.]+) s", label).group(1)) for label in labels]  # type: ignore[union-attr]
    assert times == sorted(times) and times[0] == 0.0 and times[-1] <= 2.0
    # The tool message keeps the heading and says where the frames are; no label is left there.
    assert isinstance(tool["content"], str) and "t=" not in tool["content"]
    assert tool["content"].startswith("video_1 from 0.0 s to 2.0 s")
    assert "media follow in the next message" in tool["content"]


def test_parallel_tool_results_stay_together_before_their_media(
    tmp_path: Path, silent_video: Path, image_file: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.push(
            reply_tool_calls(
                ("read_video", {"video_id": "video_1", "t_start": 0, "t_end": 1}),
                ("read_image", {"image_ids": ["image_1"]}),
            ),
            reply_text("<answer>a</answer>"),
        )
        run(server, VISION, [silent_video, image_file], tmp_path, mode="active")
        messages = server.body(1)["messages"]
    roles = [m["role"] for m in messages]
    assert roles[2:] == ["assistant", "tool", "tool", "user", "user"]
    image_turn = messages[-1]["content"]
    assert image_turn[1] == {"type": "text", "text": "image_1 (320x240):"}
    assert image_turn[2]["type"] == "image_url"


@pytest.mark.parametrize(("model", "mode"), [(VISION, "active"), (TEXT, "evidence")])
def test_unreadable_inputs_are_named_by_id_not_path(
    model: str, mode: str, tmp_path: Path, image_file: Path
) -> None:
    folder = tmp_path / "deep" / "clip.mp4"  # a folder where the dataset says a video is
    folder.mkdir(parents=True)
    broken = InputFile(id="video_x", kind="video", path=folder, given="videos/clip.mp4")
    with FakeOpenAIServer() as server:
        server.push(
            reply_tool_calls(("read_video", {"video_id": "video_x", "t_start": 0, "t_end": 1})),
            reply_text("<answer>a</answer>"),
        )
        trajectory = run(server, model, [image_file], tmp_path, extra=(broken,), mode=mode)
        (result,) = trajectory.tool_results
        assert result.result.error is not None
        assert "video_x (clip.mp4) is a directory" in result.result.error.message
        listing = "\n".join(wire_texts({"messages": server.body(0)["messages"][1:2]}))
        assert "video_x: video, file clip.mp4, unreadable" in listing
        assert host_paths(server, [tmp_path]) == []
