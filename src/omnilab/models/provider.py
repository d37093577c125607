"""What a provider is (:class:`Provider`): its adapter factory, default base URL, where its key
is read from, and what its models take. The table of providers is :mod:`omnilab.models.registry`;
:mod:`omnilab.models.keys` reads a provider's key rules from here."""

from __future__ import annotations

from dataclasses import dataclass, field

from omnilab.models.capabilities import Capabilities

__all__ = ["Provider"]


@dataclass(frozen=True)
class Provider:
    """A registered provider or alias: how to build its adapter and its defaults."""

    name: str
    factory: str
    """``module:function`` taking an :class:`AdapterSpec` and returning an adapter."""
    description: str
    base_url: str | None = None
    key_env: tuple[str, ...] = ()
    """Environment variables the API key is read from, first set wins."""
    key_required: bool = False
    capabilities: Capabilities = field(default_factory=Capabilities)
    extra: str | None = None
    """The pip extra the factory needs, named in the error when it is missing."""
    fixed_flags: bool = False
    """The adapter itself decides what every model of this provider takes (the embedded
    runtime reads text only): ``capabilities`` are known to be true, and the model family
    table, which describes what a model's weights take elsewhere, does not apply."""
