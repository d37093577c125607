"""The provider adapter protocol: the one thing a provider module implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from omnilab.config import ModelSettings
from omnilab.models.capabilities import Capabilities
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec

__all__ = ["AdapterSpec", "ProviderAdapter"]


@runtime_checkable
class ProviderAdapter(Protocol):
    """Translates one call to a provider's wire format and back.

    Adapters do not retry, cache or count: the :class:`~omnilab.models.Model` wrapper does. They
    raise :class:`~omnilab.models.errors.ProviderError` for a failed attempt.
    """

    capabilities: Capabilities
    """What the model accepts natively."""

    endpoint: str
    """Where calls go (a base URL, a file); calls to one endpoint share a concurrency limit."""

    secrets: tuple[str, ...]
    """Values that must never appear in events, errors or logs (API keys)."""

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """Run one attempt of one call."""
        ...


@dataclass(frozen=True)
class AdapterSpec:
    """Everything a provider factory needs to build an adapter, resolved by the registry."""

    name: str
    """The full model name, ``provider:model[@base_url]``."""
    provider: str
    """The provider or alias name as written (``vllm``, ``openai``, ``local``, ...)."""
    model: str
    """The part after ``provider:`` (a model id, a file)."""
    base_url: str | None
    api_key: str | None = field(repr=False)
    capabilities: Capabilities
    settings: ModelSettings
    key_hint: str = ""
    """Where the provider's key is read from, for errors (``OPENAI_API_KEY, or
    models.api_keys.openai in omnilab.toml``); empty for providers without keys."""
