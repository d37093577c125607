"""``tir -O rules=release``: the loop of OmniGAIA's released ``QwenBaseAgent`` (issue 43).

The request bodies as a whole are compared with the release's own loop in
``tests/bench/test_omnigaia_release_side_by_side.py``; these tests pin each rule on its own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agentkit import RunAgent, scripted

from omnilab.agents import Budgets
from omnilab.agents.templates import render
from omnilab.agents.tir_release import parse_release_calls, release_text
from omnilab.bench.protocols import get_protocol
from omnilab.content import Audio, Image, Text, Video
from omnilab.media import synth
from omnilab.models.capabilities import Capabilities
from omnilab.models.fake_server import FakeOpenAIServer, FakeReply
from omnilab.models.providers.scripted import text
from omnilab.models.registry import get_model
from omnilab.models.types import Message

RELEASE = {"rules": "release", "variant": "base"}


def _call(name: str, arguments: dict[str, object]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_no_tools_field_the_hermes_block_and_media_then_question(
    run_agent: RunAgent, tmp_path: Path
) -> None:
    image = synth.make_image(tmp_path / "pic.png", text="hi", size=(64, 48))
    model, adapter = scripted([text("<answer>hi</answer>")])
    run = run_agent(model, [image], "What is written?", tools=["web_search"], **RELEASE)
    messages, tools, _config = adapter.requests[0]
    assert tools == []  # no native tools: the block is in the system message
    (system,) = [m for m in messages if m.role == "system"]
    assert system.text.startswith(render("omnigaia_base") + "\n\n# Tools\n")
    assert '<tools>\n{"name": "web_search", "description": "Perform a Google web search' in (
        system.text
    )
    user = messages[1]
    assert [type(p) for p in user.content] == [Image, Text]  # no listing, no label
    assert user.content[-1] == Text(text="What is written?")
    assert run.saved.answer == "hi"


def test_bad_calls_answer_errors_and_the_loop_goes_on(run_agent: RunAgent) -> None:
    steps = [
        text(_call("nope", {}) + _call("web_search", {}) + _call("web_search", {"num": 3})),
        text('```json\n{"name": "web_search", "arguments": {"query": "x"}}\n```'),
    ]
    model, adapter = scripted(steps)
    run = run_agent(model, [], "Q?", tools=["web_search"], **RELEASE)
    tool_message = adapter.requests[1][0][-1]
    assert tool_message.role == "tool" and tool_message.tool_call_id is None
    assert [p.text for p in tool_message.content if isinstance(p, Text)] == [
        '{"error": "Tool nope not found."}',
        json.dumps(
            {"error": "AgentTools.web_search() missing 1 required positional argument: 'query'"}
        ),
        json.dumps({"error": "AgentTools.web_search() got an unexpected keyword argument 'num'"}),
    ]
    # fenced JSON without <tool_call> tags is the final answer, taken as it is
    assert run.saved.final is not None and run.saved.final.text.startswith("```json")
    assert len(adapter.requests) == 2
    assert "Notice" not in json.dumps([m.text for m in adapter.requests[1][0]])


def test_reasoning_is_kept_as_think_and_scored(run_agent: RunAgent) -> None:
    steps = [
        text(_call("nope", {}), reasoning="Try a tool."),
        text("", reasoning="It is <answer>42</answer>."),
    ]
    model, adapter = scripted(steps)
    run = run_agent(model, [], "Q?", tools=["web_search"], **RELEASE)
    kept = adapter.requests[1][0][2]
    assert kept.role == "assistant" and kept.text.startswith("<think>Try a tool.</think>\n")
    # an empty reply with reasoning is answered by its reasoning
    assert run.saved.final is not None
    assert run.saved.final.text == "<think>It is <answer>42</answer>.</think>\n"
    assert run.saved.answer == "42"


def test_a_think_block_left_in_the_content_stays_as_sent(run_agent: RunAgent) -> None:
    # A server without a reasoning parser leaves <think> in the content (Qwen3's template may
    # open the block itself, leaving only </think>): the release keeps the content verbatim in
    # later turns and in the scored output; omnilab's default moves it into the reasoning.
    first = f"<think>\nSearch first.\n</think>\n\n{_call('nope', {})}"
    last = "Checked.\n</think>\n\n<answer>42</answer>"
    model, adapter = scripted([text(first), text(last)])
    run = run_agent(model, [], "Q?", tools=["web_search"], **RELEASE)
    kept = adapter.requests[1][0][2]
    assert kept.role == "assistant" and kept.text == first
    assert run.saved.final is not None and run.saved.final.text == last
    assert run.saved.answer == "42"


def test_an_empty_reply_is_answered_with_the_releases_error_line(run_agent: RunAgent) -> None:
    model, _ = scripted([text("")])
    run = run_agent(model, [], "Q?", **RELEASE)
    assert run.saved.final is not None
    assert (
        run.saved.final.text == release_text("empty_reply") == "Error: Empty response from model."
    )
    assert run.saved.status == "answered"


def test_no_seed_and_the_forced_final_call_keeps_the_settings(run_agent: RunAgent) -> None:
    steps = [text(_call("nope", {})), text("<answer>x</answer>")]
    model, adapter = scripted(steps)
    options = {
        **RELEASE,
        "generate": {"temperature": 0.6, "extra_body": {"top_k": 20}},
        "forced_final_generate": {
            "temperature": 0.2,
            "timeout_s": 300,
            "extra_body": {"top_k": 20, "repetition_penalty": 1.05},
        },
    }
    run = run_agent(model.bound(seed=7), [], "Q?", budgets=Budgets(max_turns=1), **options)
    first, forced = adapter.requests
    assert first[2].seed is None and forced[2].seed is None  # the release sends none
    assert forced[1] == [] and forced[2].tool_choice is None
    assert forced[2].timeout_s == 300 and forced[2].extra_body["repetition_penalty"] == 1.05
    assert forced[0][0] == first[0][0]  # the same system message, Hermes block included
    assert forced[0][-1].text == render("forced_final_base")
    assert run.saved.final is not None and run.saved.final.forced
    # omnilab's own loop keeps the run's seed
    model, adapter = scripted([text("<answer>x</answer>")])
    run_agent(model.bound(seed=7), [], "Q?")
    assert adapter.requests[0][2].seed == 7


def test_each_videos_soundtrack_follows_all_media(run_agent: RunAgent, tmp_path: Path) -> None:
    video = synth.make_video(tmp_path / "clip.mp4", duration=1.0, size=(64, 48))
    image = synth.make_image(tmp_path / "pic.png", text="hi", size=(64, 48))
    model, adapter = scripted([text("<answer>hi</answer>")])
    run_agent(model, [video, image], "Q?", delivery={"soundtrack": True}, **RELEASE)
    parts = adapter.requests[0][0][1].content
    assert [type(p) for p in parts] == [Video, Image, Audio, Text]
    track = parts[2]
    assert isinstance(track, Audio) and track.path == video and track.start == 0.0


def test_parse_release_calls_reads_tags_only() -> None:
    assert [
        c.name for c in parse_release_calls(_call("a", {}) + "<tool_call>{bad}</tool_call>")
    ] == ["a"]
    assert parse_release_calls('```json\n{"name": "a", "arguments": {}}\n```') == []


def test_a_model_without_video_gets_the_presets_frames(run_agent: RunAgent, tmp_path: Path) -> None:
    # The release's Gemini path re-encodes an MP4 (a named divergence); omnilab sends frames at
    # the preset's 2 fps, at most 512 px, each after its time, then the soundtrack after all media.
    video = synth.make_video(tmp_path / "clip.mp4", duration=1.8, size=(640, 480))
    model, adapter = scripted(
        [text("<answer>hi</answer>")], caps=Capabilities(image=True, audio=True)
    )
    delivery = {"soundtrack": True, "frames_fps": 2, "frames_max_edge": 512}
    run_agent(model, [video], "Q?", delivery=delivery, **RELEASE)
    parts = adapter.requests[0][0][1].content
    images = [p for p in parts if isinstance(p, Image)]
    assert len(images) == 3  # int(1.8 s * 2), as the release counts (round() would give 4)
    labels = [p.text for p in parts if isinstance(p, Text)]
    assert len([t for t in labels if t.startswith("t=")]) == 3  # each frame after its time
    from PIL import Image as PILImage

    with PILImage.open(images[0].path) as first:  # type: ignore[arg-type]
        assert first.size == (512, 384)
    assert [type(p) for p in parts[-2:]] == [Audio, Text]


def test_a_text_input_is_inlined_before_the_question(run_agent: RunAgent, tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("the code is 42", encoding="utf-8")
    model, adapter = scripted([text("<answer>42</answer>")])
    run_agent(model, [note], "Q?", **RELEASE)
    parts = adapter.requests[0][0][1].content
    assert len(parts) == 2 and isinstance(parts[0], Text) and "the code is 42" in parts[0].text
    assert parts[1] == Text(text="Q?")


def test_reasoning_under_the_newer_field_name_is_kept_as_a_named_gap() -> None:
    # QwenBaseAgent reads getattr(message, "reasoning_content"); omnilab also reads "reasoning"
    # (the name newer vLLM sends), which the preset names.
    gap = {g.finding: g for g in get_protocol("omnigaia-paper").gaps}["reasoning field"]
    assert "reasoning_content" in gap.reference and gap.reason
    message = {"role": "assistant", "content": "<answer>4</answer>", "reasoning": "2+2."}
    body = {
        "id": "r",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    with FakeOpenAIServer(default=FakeReply(body=body)) as fake:
        model = get_model(f"vllm:m@{fake.base_url}", cache=False)
        out = asyncio.run(model.generate([Message.user("Q?")]))
    assert out.reasoning == "2+2." and out.text == "<answer>4</answer>"
