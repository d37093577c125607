"""Perception modes, their defaults from capability flags, tool sets and the B.2 prompts."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentkit import ALL, TEXT_ONLY, VISION, RunAgent, scripted
from PIL import Image as PILImage

from omnilab.agents import AgentConfigError, agent_names, get_agent
from omnilab.agents.templates import load_template, render, template_names
from omnilab.agents.toolset import default_tools
from omnilab.agents.views import default_mode
from omnilab.content import Audio, Image, Text, Video
from omnilab.inputs import InputSet
from omnilab.models.capabilities import Capabilities
from omnilab.models.providers import scripted as s

BASE_PROMPT = (
    "You are an omni-modal general AI assistant. Please answer the question provided to you "
    "based on the input image, audio, or video content.\n\nYou should think step by step to "
    "answer the question. You may use available tools to assist with your analysis if needed."
    "\n\nPlease provide your final answer using this format: <answer>YOUR_ANSWER</answer>."
)
ATLAS_NOTE = (
    "**Note:**\n- If there are segments in the input image/audio/video that are unclear to you, "
    'you should use the "read_image/read_audio/read_video" tool to examine them carefully to '
    "ensure you have correctly perceived the input media.\n\n"
)


def test_system_prompts_are_the_papers_b2_prompts_verbatim() -> None:
    assert render("omnigaia_base") == BASE_PROMPT
    head, tail = BASE_PROMPT.split("Please provide")
    assert render("omnigaia_omniatlas") == head + ATLAS_NOTE + "Please provide" + tail
    for name in template_names():  # every template names its source in its header
        raw = (Path(__file__).parents[2] / "src/omnilab/agents/prompts" / f"{name}.txt").read_text()
        assert raw.startswith("# Source:") or raw.startswith("# omnilab's own wording")


def test_templates_render_strictly() -> None:
    with pytest.raises(KeyError):
        render("forced_final_omniatlas")
    with pytest.raises(ValueError, match="no placeholder"):
        render("omnigaia_base", question="x")
    assert "${" not in load_template("omnigaia_base").template


@pytest.mark.parametrize(
    ("caps", "expected"),
    [(ALL, "native"), (Capabilities(image=True, audio=True), "native"), (VISION, "active")],
)
def test_default_mode_follows_the_capability_flags(
    caps: Capabilities, expected: str, video: Path
) -> None:
    inputs = InputSet.from_paths([video])
    assert default_mode(inputs, caps) == expected
    assert default_mode(inputs, TEXT_ONLY) == "evidence"
    assert default_mode(InputSet([]), TEXT_ONLY) == "native"  # nothing to perceive


def test_native_sends_every_file(run_agent: RunAgent, video: Path, image_file: Path) -> None:
    model, adapter = scripted([s.text("<answer>a</answer>")])
    run = run_agent(model, [video, image_file], question="Q?")
    user = adapter.requests[0][0][1]
    media = [p for p in user.content if not isinstance(p, Text)]
    assert [type(p) for p in media] == [Video, Image]
    assert isinstance(user.content[0], Text) and "video_1" in user.content[0].text
    assert isinstance(user.content[-1], Text) and user.content[-1].text == "Q?"
    start = run.saved.run_start
    assert start is not None and start.config["mode"] == "native"
    assert start.config["tools"] == ["web_search", "page_browser", "code_executor"]
    assert adapter.requests[0][0][0].text == BASE_PROMPT


def test_active_gives_a_compact_view_and_read_tools(
    run_agent: RunAgent, video: Path, image_file: Path, audio_file: Path
) -> None:
    model, adapter = scripted([s.text("<answer>a</answer>")], caps=VISION)
    run = run_agent(model, [video, image_file, audio_file])
    start = run.saved.run_start
    assert start is not None and start.config["mode"] == "active"
    assert start.config["variant"] == "omniatlas"
    sent, specs, _ = adapter.requests[0]
    assert sent[0].text == render("omnigaia_omniatlas")
    assert [t.name for t in specs][:3] == ["read_video", "read_audio", "read_image"]
    images = [p for p in sent[1].content if isinstance(p, Image)]
    assert len(images) == 2  # the video's contact sheet and the shrunk image; no audio (flags)
    assert not any(isinstance(p, Audio | Video) for p in sent[1].content)
    assert all(p.path is not None and p.path.is_relative_to(run.workspace) for p in images)
    with PILImage.open(images[0].path) as sheet:  # type: ignore[arg-type]
        assert sheet.width > 320  # a grid of frames, not one frame


def test_active_read_video_returns_frames(run_agent: RunAgent, video: Path) -> None:
    model, adapter = scripted(
        [
            s.tool_call("read_video", {"video_id": "video_1", "t_start": 1, "t_end": 2}),
            s.text("<answer>a</answer>"),
        ],
        caps=VISION,
    )
    run = run_agent(model, [video], mode="active")
    (result,) = run.saved.tool_results
    assert result.result.error is None
    assert any(isinstance(p, Image) for p in result.result.content)
    assert adapter.requests[1][0][-1].role == "tool"


def test_tools_mode_sends_no_media_and_asks_the_perception_model(
    run_agent: RunAgent, video: Path
) -> None:
    model, adapter = scripted(
        [
            s.tool_call("vision_qa", {"question": "What is written?", "video_path": "video_1"}),
            s.text("<answer>omnilab</answer>"),
        ],
        caps=TEXT_ONLY,
    )
    perception, seen = scripted([s.text("The frames show the word omnilab.")], name="scripted:eye")
    run = run_agent(model, [video], mode="tools", roles={"perception": perception})
    sent, specs, _ = adapter.requests[0]
    assert all(isinstance(p, Text) for m in sent for p in m.content)
    assert {t.name for t in specs} >= {"audio_qa", "vision_qa"}
    (result,) = run.saved.tool_results
    assert result.result.text == "The frames show the word omnilab."
    eye_messages = seen.requests[0][0]
    assert any(isinstance(p, Image) for m in eye_messages for p in m.content)
    # The perception model's call is in the trajectory too, and not mistaken for an agent turn.
    assert [c.model for c in run.saved.model_calls] == [
        "scripted:agent",
        "scripted:eye",
        "scripted:agent",
    ]
    start = run.saved.run_start
    assert start is not None and start.models == {
        "agent": "scripted:agent",
        "perception": "scripted:eye",
    }
    assert [m.role for m in run.saved.messages()] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_evidence_mode_puts_a_digest_in_the_first_message(
    run_agent: RunAgent, tmp_path: Path
) -> None:
    from omnilab.media import synth

    clip = synth.make_video(tmp_path / "clip.mp4", duration=2.0, size=(640, 360), text="HELLO 42")
    model, adapter = scripted([s.text("<answer>HELLO 42</answer>")], caps=TEXT_ONLY)
    run = run_agent(model, [clip])
    start = run.saved.run_start
    assert start is not None and start.config["mode"] == "evidence"
    sent, specs, _ = adapter.requests[0]
    assert all(isinstance(p, Text) for m in sent for p in m.content)
    text = sent[1].text
    assert "video_1 (clip.mp4)" in text and "HELLO 42" in text  # on-screen text, by OCR
    assert [t.name for t in specs][:2] == ["read_video", "read_audio"]
    assert run.saved.answer == "HELLO 42"


def test_tool_results_are_fitted_to_a_text_only_model(
    run_agent: RunAgent, image_file: Path
) -> None:
    model, adapter = scripted(
        [s.tool_call("read_image", {"image_ids": ["image_1"]}), s.text("<answer>a</answer>")],
        caps=TEXT_ONLY,
    )
    run = run_agent(model, [image_file], mode="tools", tools=["read_image"])
    tool_msg = adapter.requests[1][0][-1]
    assert tool_msg.role == "tool" and all(isinstance(p, Text) for p in tool_msg.content)
    (result,) = run.saved.tool_results
    assert all(isinstance(p, Text) for p in result.result.content)  # recorded as sent


def test_native_refuses_media_the_model_cannot_take(run_agent: RunAgent, video: Path) -> None:
    model, adapter = scripted([], caps=TEXT_ONLY)
    with pytest.raises(AgentConfigError, match="mode native"):
        run_agent(model, [video], mode="native")
    assert adapter.requests == []


def test_unknown_tools_and_options_are_refused(run_agent: RunAgent) -> None:
    model, _ = scripted([])
    with pytest.raises(AgentConfigError, match="unknown tool 'shell'"):
        run_agent(model, tools=["web_search", "shell"])
    with pytest.raises(AgentConfigError, match="bad tir option mode"):
        get_agent("tir", mode="telepathy")
    with pytest.raises(AgentConfigError, match="bad tir option colour"):
        get_agent("tir", colour="blue")
    with pytest.raises(AgentConfigError, match="unknown agent 'nope'"):
        get_agent("nope")
    assert "tir" in agent_names()


def test_default_tools_fit_the_inputs(video: Path, image_file: Path) -> None:
    vid, img = InputSet.from_paths([video]), InputSet.from_paths([image_file])
    web = ["web_search", "page_browser", "code_executor"]
    assert default_tools("native", vid) == web
    assert default_tools("active", vid) == ["read_video", "read_audio", *web]
    assert default_tools("evidence", img) == ["read_image", *web]
    assert default_tools("tools", img) == ["vision_qa", *web]


def test_audio_as_tool_shows_pictures_and_leaves_sound_to_audio_qa(
    run_agent: RunAgent, video: Path, image_file: Path, audio_file: Path
) -> None:
    """Table 3, "audio as tool": frames and images native, no sound, only audio_qa offered."""
    model, adapter = scripted([s.text("<answer>a</answer>")], caps=VISION)
    run = run_agent(model, [video, image_file, audio_file], mode="audio-as-tool")
    sent, specs, _ = adapter.requests[0]
    user = sent[1].content
    assert not any(isinstance(p, Audio | Video) for p in user)
    images = [p for p in user if isinstance(p, Image)]
    # The 4 s fixture video at 1 fps gives 4 frames, then the image input itself.
    assert len(images) == 5 and images[-1].path == image_file
    times = [p.text for p in user if isinstance(p, Text) and p.text.startswith("t=")]
    assert len(times) == 4 and times[0] == "t=0.00 s"
    assert any("ask audio_qa" in p.text for p in user if isinstance(p, Text))
    names = [t.name for t in specs]
    assert "audio_qa" in names and "vision_qa" not in names and "read_video" not in names
    start = run.saved.run_start
    assert start is not None and start.config["mode"] == "audio-as-tool"


def test_vision_as_tool_gives_sound_and_leaves_pictures_to_vision_qa(
    run_agent: RunAgent, video: Path, image_file: Path, audio_file: Path
) -> None:
    """Table 3, "vision as tool": audio files and the video's sound track, no pictures."""
    caps = Capabilities(audio=True)
    model, adapter = scripted([s.text("<answer>a</answer>")], caps=caps)
    run_agent(model, [video, image_file, audio_file], mode="vision-as-tool")
    sent, specs, _ = adapter.requests[0]
    user = sent[1].content
    assert not any(isinstance(p, Image | Video) for p in user)
    sounds = [p for p in user if isinstance(p, Audio)]
    assert [p.path for p in sounds] == [video, audio_file]  # the video's track, the audio file
    names = [t.name for t in specs]
    assert "vision_qa" in names and "audio_qa" not in names


@pytest.mark.parametrize(
    ("mode", "caps"), [("audio-as-tool", TEXT_ONLY), ("vision-as-tool", VISION)]
)
def test_single_modality_modes_need_their_native_modality(
    run_agent: RunAgent, video: Path, mode: str, caps: Capabilities
) -> None:
    model, _ = scripted([s.text("<answer>a</answer>")], caps=caps)
    with pytest.raises(AgentConfigError, match=f"mode {mode} shows"):
        run_agent(model, [video], mode=mode)
