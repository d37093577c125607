"""Where the run header says a model's capability flags come from, and that finding out reads
no installed package's entry points for a built-in provider (it was 11-19 ms of every run's
start)."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

from omnilab.bench.header import capability_origin
from omnilab.models.registry import PROVIDERS


@pytest.mark.parametrize(
    ("name", "origin"),
    [
        ("scripted:x", ("provider scripted defaults", True)),
        ("vllm:qwen-omni", ("family table '*omni*'", True)),
        ("vllm:bench@http://127.0.0.1:9/v1", ("no known flags", False)),
        ("no-such-provider:x", ("no known flags", False)),
    ],
)
def test_the_origin_of_a_models_flags(name: str, origin: tuple[str, bool]) -> None:
    assert capability_origin(name) == origin


def test_a_built_in_provider_is_looked_up_without_reading_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[Any] = []

    def entry_points(**kw: Any) -> Any:
        read.append(kw)
        return metadata.EntryPoints(())

    PROVIDERS.refresh()  # forget entry points read by earlier tests
    monkeypatch.setattr(metadata, "entry_points", entry_points)
    assert capability_origin("scripted:x") == ("provider scripted defaults", True)
    assert capability_origin("vllm:bench@http://127.0.0.1:9/v1")[1] is False
    assert read == []
    PROVIDERS.refresh()
