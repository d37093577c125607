"""What ``omnilab models`` shows: providers, their endpoints, keys (set or not) and flags."""

from __future__ import annotations

from pydantic import BaseModel

from omnilab.config import get_settings
from omnilab.models.capabilities import Capabilities
from omnilab.models.registry import key_is_set, local_model_available, providers

__all__ = ["ProviderInfo", "describe_providers"]


class ProviderInfo(BaseModel):
    """One provider as listed to a user. Never holds a key, only whether one is set."""

    name: str
    description: str
    base_url: str | None
    key_env: list[str]
    key: str
    """``set``, ``missing`` (required and absent), ``optional`` or ``none`` (no key used)."""
    capabilities: Capabilities
    available: bool
    """False when an optional extra it needs is not installed."""


def describe_providers() -> list[ProviderInfo]:
    """Every registered provider with its defaults and key status."""
    settings = get_settings().models
    rows: list[ProviderInfo] = []
    for p in providers():
        if not p.key_env and p.name not in settings.api_keys:
            key = "none"
        elif key_is_set(p, settings):
            key = "set"
        else:
            key = "missing" if p.key_required else "optional"
        rows.append(
            ProviderInfo(
                name=p.name,
                description=p.description,
                base_url=p.base_url,
                key_env=list(p.key_env),
                key=key,
                capabilities=p.capabilities,
                available=local_model_available() if p.name == "local" else True,
            )
        )
    return rows
