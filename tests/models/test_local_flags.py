"""The embedded model's capability flags are its runtime's: text, tools and JSON schema, its
context window; runs on it print no "no known capability flags" warning."""

from __future__ import annotations

import pytest

from omnilab.bench.header import ask_header, capability_origin, render_header, run_header
from omnilab.models import get_model
from omnilab.models.capabilities import resolve_capabilities
from omnilab.models.registry import PROVIDERS, local_model_available


def test_local_provider_flags_are_known_and_the_family_table_does_not_apply() -> None:
    provider = PROVIDERS.get("local")
    assert provider.fixed_flags
    for name in ("local:smollm2", "local:gemma3-270m", "local:/models/qwen2.5-omni.gguf"):
        origin, known = capability_origin(name)
        assert known and origin == "provider local: its runtime fixes them", name
    # Gemma 3 takes images elsewhere (the family table), not in the text-only embedded runtime.
    flags = resolve_capabilities(
        "local", "gemma3-270m", provider.capabilities, {}, families=not provider.fixed_flags
    )
    assert flags.describe() == "text tools json-schema"
    assert resolve_capabilities("vllm", "gemma3-270m", provider.capabilities, {}).image


@pytest.mark.skipif(not local_model_available(), reason="the [local] extra is not installed")
def test_smollm2_has_true_flags_and_no_warning(video: object) -> None:
    model = get_model("local:smollm2")  # the weights load on the first call, not here
    caps = model.capabilities
    assert (caps.image, caps.audio, caps.video) == (False, False, False)
    assert caps.tool_calls and caps.json_schema and caps.context_tokens == 4096
    for agent in ("tir", "master", "deepsearch", "ota"):
        header = run_header(agent=agent, model=model, task_files=[[]])
        assert header.warnings == [], (agent, header.warnings)
    lines = render_header(ask_header([video], model="local:smollm2"))  # type: ignore[list-item]
    assert not [line for line in lines if line.startswith("warning:")], lines
    assert "model flags: text tools json-schema (provider local: its runtime fixes them)" in lines
