"""Fixtures of the model tests: a fake OpenAI-compatible server, quick retries, no real keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from omnilab.config import get_settings
from omnilab.models.fake_server import FakeOpenAIServer
from omnilab.models.registry import providers

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(autouse=True)
def _quick_retries_no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries wait milliseconds, and keys from the developer's shell never reach a test."""
    for provider in providers():
        for var in provider.key_env:
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_S", "0.01")
    monkeypatch.setenv("OMNILAB_MODELS__BACKOFF_MAX_S", "1.0")
    get_settings.cache_clear()


@pytest.fixture()
def server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible server on 127.0.0.1 that records requests."""
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture()
def data_dir() -> Path:
    return DATA
