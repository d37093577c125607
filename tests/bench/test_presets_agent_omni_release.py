"""The ``agent-omni-paper`` preset's settings taken from the release's model configs
(``configs/model_configs/*.yaml`` for Table 3's pool) and its named divergences, stated as the
release does them."""

from __future__ import annotations

from omnilab.agents.master import MasterOptions
from omnilab.bench.protocols import get_protocol


def test_the_preset_takes_the_release_model_configs() -> None:
    preset = get_protocol("agent-omni-paper")
    options = MasterOptions.model_validate(preset.agent_options)
    assert options.rules == "release"
    assert options.generate_for("text").max_tokens == 32768  # deepseek-r1.yaml
    for role in ("master", "image", "video", "audio"):  # claude3.7-sonnet.yaml, qwen2.5-omni.yaml
        config = options.generate_for(role)
        assert (config.max_tokens, config.temperature) == (8192, 0.0)
    assert all(options.generate_for(r).send_seed is False for r in ("master", "text", "audio"))
    assert (options.max_image_input, options.max_frames_num) == (20, 60)


def test_the_divergences_state_what_the_release_does() -> None:
    gaps = {g.finding: g for g in get_protocol("agent-omni-paper").gaps}
    inputs = gaps["which inputs each agent sees"].reference
    assert "only the first input of its kind" not in inputs
    assert "every audio file" in inputs and "only the first video" in inputs
    assert "not printed" not in " ".join(g.reference for g in gaps.values())
    assert "configs/model_configs" in gaps["per-model settings"].reference
    assert all(g.reason for g in gaps.values())
    assert "30 s apart" in gaps["failed model calls"].reference  # models.py media_batch
    assert "<think> parts" not in gaps  # keep_think: the replies are read as the release reads them
