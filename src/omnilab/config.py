"""Settings: defaults < ``omnilab.toml`` < ``OMNILAB_*`` environment variables < explicit arguments.

Nothing is read at import time: call :func:`get_settings` when a value is needed.
The TOML file is looked up at ``$OMNILAB_CONFIG`` if set, else ``./omnilab.toml``.
Nested fields use ``__`` in environment variables, e.g. ``OMNILAB_MEDIA__MAX_FRAMES=64``.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import platformdirs
from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

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
from omnilab.errors import OmnilabError

__all__ = [
    "AgentSettings",
    "BenchSettings",
    "ConfigError",
    "MediaSettings",
    "ModelSettings",
    "PerceptionSettings",
    "PerceptionToolSettings",
    "SandboxLimits",
    "SandboxSettings",
    "Settings",
    "WebSettings",
    "config_file",
    "get_settings",
]


class ConfigError(OmnilabError):
    """A setting in the environment or the config file has an invalid value."""


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

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Dotenv is deliberately not read: secrets come from the environment or the TOML file only.
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=config_file()),
        )


def config_file() -> Path:
    """The TOML file settings are read from (it need not exist)."""
    return Path(os.environ.get("OMNILAB_CONFIG", "omnilab.toml"))


@cache
def get_settings() -> Settings:
    """The process-wide settings, read once. Tests call ``get_settings.cache_clear()``.

    Raises :class:`ConfigError` naming the setting, its env var and the file when a value is bad.
    """
    try:
        return Settings()
    except ValidationError as e:
        raise ConfigError(_describe(e)) from e
    except (OSError, ValueError) as e:  # unreadable or malformed TOML
        raise ConfigError(f"cannot read config file {config_file()}: {e}") from e


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    dotted = ".".join(str(part) for part in first["loc"])
    env = "OMNILAB_" + "__".join(str(part) for part in first["loc"]).upper()
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return (
        f"invalid setting {dotted} = {first.get('input')!r}: {first['msg']}{more}; "
        f"fix {env} or {config_file()}"
    )
