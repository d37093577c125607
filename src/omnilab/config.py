"""Settings: defaults < the user's ``omnilab.toml`` < the project's ``./omnilab.toml`` <
``OMNILAB_*`` environment variables < explicit arguments.

Nothing is read at import time: call :func:`get_settings` when a value is needed.
``$OMNILAB_CONFIG``, when set, names the only TOML file read (a relative one names the current
folder's file, and is trusted only as a project's file is). The project's ``./omnilab.toml`` is
not trusted until the user runs ``omnilab trust`` on it: until then it may set ordinary options
only (:mod:`omnilab._config_files`). Nested fields use ``__`` in environment variables, e.g.
``OMNILAB_MEDIA__MAX_FRAMES=64``.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import platformdirs
from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from omnilab._config_files import ConfigError, check_trust, config_layers
from omnilab._remote_sections import BucketSettings, RemoteSettings
from omnilab._sections import (
    AgentSettings,
    BenchSettings,
    MediaSettings,
    ModelSettings,
    PerceptionSettings,
    PerceptionToolSettings,
    SandboxLimits,
    SandboxSettings,
    WebSettings,
)

__all__ = [
    "AgentSettings",
    "BenchSettings",
    "BucketSettings",
    "ConfigError",
    "MediaSettings",
    "ModelSettings",
    "PerceptionSettings",
    "PerceptionToolSettings",
    "RemoteSettings",
    "SandboxLimits",
    "SandboxSettings",
    "Settings",
    "WebSettings",
    "config_file",
    "get_settings",
]


def _default_cache_dir() -> Path:
    return platformdirs.user_cache_path("omnilab")


class Settings(BaseSettings):
    """All omnilab settings. Field docstrings are the documentation of each setting."""

    model_config = SettingsConfigDict(
        env_prefix="OMNILAB_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    cache_dir: Path = Field(default_factory=_default_cache_dir)
    """Root of every on-disk cache (media outputs, model responses)."""

    media: MediaSettings = Field(default_factory=MediaSettings)

    model: str | None = None
    """The default model, ``provider:model[@base_url]``; unset means ``local:smollm2`` when the
    ``[local]`` extra is installed."""

    models: ModelSettings = Field(default_factory=ModelSettings)

    perception: PerceptionSettings = Field(default_factory=PerceptionSettings)

    perception_tools: PerceptionToolSettings = Field(default_factory=PerceptionToolSettings)

    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)

    bench: BenchSettings = Field(default_factory=BenchSettings)

    web: WebSettings = Field(default_factory=WebSettings)

    agents: AgentSettings = Field(default_factory=AgentSettings)

    remote: RemoteSettings = Field(default_factory=RemoteSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Dotenv is deliberately not read: secrets come from the environment or the TOML files.
        # Each file is read once (its bytes hashed for trust and parsed); an untrusted one that
        # names a security-relevant setting refuses the run here, for every command and the API.
        layers = config_layers()
        for layer in layers:
            check_trust(layer)
        files = [InitSettingsSource(settings_cls, layer.data) for layer in reversed(layers)]
        return (init_settings, env_settings, *files)


def config_file() -> Path:
    """The TOML file of the run's own folder (or ``$OMNILAB_CONFIG``): the one a command line
    points at; it need not exist. :func:`omnilab._config_files.config_layers` lists every file."""
    return Path(os.environ.get("OMNILAB_CONFIG", "omnilab.toml"))


@cache
def get_settings() -> Settings:
    """The process-wide settings, read once. Tests call ``get_settings.cache_clear()``.

    Raises :class:`ConfigError` naming the setting, its env var and the file when a value is bad.
    """
    try:
        return Settings()
    except ValidationError as e:
        # pydantic's own message repeats the value: not chained for a store's settings.
        secret = any(err["loc"][:1] == ("remote",) for err in e.errors())
        raise ConfigError(_describe(e)) from (None if secret else e)
    except (OSError, ValueError) as e:  # unreadable TOML
        raise ConfigError(f"cannot read config file {config_file()}: {e}") from e


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    dotted = ".".join(str(part) for part in first["loc"])
    env = "OMNILAB_" + "__".join(str(part) for part in first["loc"]).upper()
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    shown = f" = {first.get('input')!r}"
    if first["loc"][:1] == ("remote",):
        # A store's settings may hold a key put where a name belongs: their values are not
        # shown; the buckets' table is one variable (JSON).
        shown, env = "", "OMNILAB_REMOTE__BUCKETS"
    return f"invalid setting {dotted}{shown}: {first['msg']}{more}; fix {env} or {config_file()}"
