"""The ``ota`` agent as the release's batch evaluator (``demo/omniagent_demo_pro.py``) runs
``video_env.py``: free sampling (no ``response_format``, no seed) with ``stop=["<|im_end|>",
"```"]``, DELETE_MEDIA_WHEN_ERROR and BYPASS_DURATION_CHECK, which the ``omniagent-paper``
preset turns on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_ota import frames, media, run_ota, span, turn

from omnilab.agents.ota import OtaOptions
from omnilab.agents.ota.env import OtaEnv
from omnilab.bench.protocols import get_protocol
from omnilab.content import Image, Text
from omnilab.inputs import InputSet
from omnilab.media import synth
from omnilab.media.errors import MediaError
from omnilab.media.probe import probe
from omnilab.models.capabilities import Capabilities
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.registry import get_model
from omnilab.models.types import GenerateConfig, Message

RELEASE = {"rules": "release"}


@pytest.fixture(scope="session")
def clip20(media_dir: Path) -> Path:
    return synth.make_video(media_dir / "ota20.mp4", duration=20.0, fps=5, size=(160, 120))


def test_the_preset_samples_freely_with_the_release_stop_strings() -> None:
    preset = get_protocol("omniagent-paper")
    options = OtaOptions.model_validate(preset.agent_options)
    assert options.generate.stop == ["<|im_end|>", "```"]
    assert options.generate.send_seed is False
    assert options.delete_media_on_error and not options.duration_check


def test_no_response_format_under_the_release_rules(tmp_path: Path, clip20: Path) -> None:
    schema_caps = Capabilities(image=True, audio=True, video=True, json_schema=True)
    answer = turn({"type": "answer", "content": "B"})
    ran = run_ota(tmp_path, [turn(frames(0, 4, 2)), answer], clip20, caps=schema_caps,
                  max_steps=3, dynamic_steps=False, **RELEASE)  # fmt: skip
    assert all(config.response_format is None for *_, config in ran.adapter.requests)
    assert ran.saved.run_start is not None and ran.saved.run_start.config["grammar"] is False
    # omnilab's rules constrain decoding on a server that can
    ran = run_ota(tmp_path, [answer], clip20, caps=schema_caps, max_steps=3, dynamic_steps=False)
    assert ran.adapter.requests[0][2].response_format is not None


def test_no_seed_and_the_stop_strings_reach_the_wire() -> None:
    preset = OtaOptions.model_validate(get_protocol("omniagent-paper").agent_options)
    with FakeOpenAIServer(default=reply_text("{}")) as fake:
        model = get_model(f"vllm:agent@{fake.base_url}", cache=False).bound(seed=7)
        two = Message(role="user", content=[Text(text="first"), Text(text="\n[NOTICE] Step 0/5.")])
        asyncio.run(model.generate([two], config=preset.generate))
        asyncio.run(model.generate([two], config=GenerateConfig()))
        free, seeded = fake.body(0), fake.body(1)
    assert "seed" not in free and "response_format" not in free
    assert free["stop"] == ["<|im_end|>", "```"]
    assert seeded["seed"] == 7  # omnilab's default: the run's seed on every call
    # the release's parts, which Qwen2.5-Omni's template writes one after another
    parts = [{"type": "text", "text": "first"}, {"type": "text", "text": "\n[NOTICE] Step 0/5."}]
    assert free["messages"][0]["content"] == parts
    assert "".join(p["text"] for p in parts) == "first\n[NOTICE] Step 0/5."
    assert seeded["messages"][0]["content"] == "first\n\n[NOTICE] Step 0/5."  # one string


def test_an_invalid_action_turns_even_the_newest_media_into_a_placeholder(
    tmp_path: Path, clip20: Path
) -> None:
    replies = [turn(frames(0, 4, 2)), "not json", turn({"type": "answer", "content": "B"})]
    kept = run_ota(tmp_path, replies, clip20, max_steps=4, dynamic_steps=False, **RELEASE)
    assert any(isinstance(p, Image) for m in kept.request(2) for p in m.content)
    gone = run_ota(tmp_path, replies, clip20, max_steps=4, dynamic_steps=False,
                   delete_media_on_error=True, **RELEASE)  # fmt: skip
    third = gone.request(2)
    assert not any(isinstance(p, Image) for m in third for p in m.content)
    assert Text(
        text="Frames 0.00s-4.00s (num=2). Timestamps: [0.00s, 4.00s] "
        "[MEDIA OMITTED - Refer to your Observation]"
    ) in [p for m in third for p in m.content]


def test_the_duration_check_can_be_bypassed(tmp_path: Path, clip20: Path) -> None:
    info = probe(clip20)
    caps = Capabilities(image=True, audio=True, video=True)
    (source,) = InputSet.from_paths([clip20])
    strict = OtaEnv(source, info, caps, OtaOptions(rules="release"))
    with pytest.raises(MediaError, match="Bad duration"):
        strict._verify(clip20, 60.0, needs_audio=False)
    bypass = OtaEnv(source, info, caps, OtaOptions(rules="release", duration_check=False))
    bypass._verify(clip20, 60.0, needs_audio=False)  # 20 s for 60 s asked: accepted


def test_a_clips_sound_is_a_named_gap_and_no_processor_setting_is_sent(
    tmp_path: Path, clip20: Path
) -> None:
    # demo/omniagent_demo_pro.py runs Qwen-Omni's processor with use_audio_in_video=True: the
    # preset sends the clip alone, without that setting, and says so.
    preset = get_protocol("omniagent-paper")
    gap = {g.finding: g for g in preset.gaps}["a clip's sound"]
    assert "use_audio_in_video=True" in gap.reference and gap.reason
    assert (
        "mm_processor_kwargs"
        not in OtaOptions.model_validate(preset.agent_options).generate.extra_body
    )
    replies = [turn(span("get_clip", 4, 8)), turn({"type": "answer", "content": "B"})]
    ran = run_ota(tmp_path, replies, clip20, max_steps=4, dynamic_steps=False, **RELEASE)
    assert media(ran.request(1)[-1]) == ["video"]


def test_a_think_block_before_the_json_is_invalid_under_the_preset(
    tmp_path: Path, clip20: Path
) -> None:
    # video_env.py parses vLLM's generated text as it is; omnilab's model layer would move the
    # <think> block out of the reply and the JSON would pass.
    preset = OtaOptions.model_validate(get_protocol("omniagent-paper").agent_options)
    assert preset.generate.keep_think
    thought = "<think>Look first.</think>" + turn(frames(0, 4, 2))
    replies = [thought, turn(frames(0, 4, 2)), turn({"type": "answer", "content": "B"})]
    ran = run_ota(tmp_path, replies, clip20, max_steps=4, dynamic_steps=False,
                  generate=preset.generate, **RELEASE)  # fmt: skip
    assert ran.codes()[0] == "INVALID_JSON"
    ran = run_ota(tmp_path, replies, clip20, max_steps=4, dynamic_steps=False, **RELEASE)
    assert ran.codes()[0] is None
