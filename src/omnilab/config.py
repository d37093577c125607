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
from pydantic import BaseModel, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

__all__ = ["MediaSettings", "Settings", "config_file", "get_settings"]


def _default_cache_dir() -> Path:
    return platformdirs.user_cache_path("omnilab")


class MediaSettings(BaseModel):
    """Limits and defaults of the media environment."""

    max_frames: int = Field(default=256, ge=1)
    """Most frames one request may ask for (``TOO_MANY_FRAMES`` above it)."""

    max_clip_seconds: float = Field(default=600.0, gt=0)
    """Longest clip one request may cut (``TOO_LONG`` above it)."""

    max_audio_seconds: float = Field(default=3600.0, gt=0)
    """Longest audio segment one request may extract (``TOO_LONG`` above it)."""

    max_edge: int | None = Field(default=None, ge=16)
    """Default longest edge of returned frames in pixels; ``None`` keeps the source size."""

    audio_sample_rate: int = Field(default=16_000, ge=8_000)
    """Sample rate of extracted audio (mono PCM16)."""

    cache_max_bytes: int = Field(default=2 * 1024**3, ge=0)
    """Size bound of the media cache; least recently used entries are evicted past it."""


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
    """The process-wide settings, read once. Tests call ``get_settings.cache_clear()``."""
    return Settings()
