"""Fixtures of the harness tests: fixture files, the OmniGAIA sample, scripted models."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from omnilab.bench import Task, load_dataset
from omnilab.models import Model
from omnilab.models.providers.scripted import ScriptStep, scripted_model
from omnilab.models.retry import RetryPolicy

# The same folder as tests/conftest.py's TEST_DATA (conftest modules are not importable).
TEST_DATA = Path(__file__).resolve().parents[1] / "data"

MakeModel = Callable[..., Model]


@pytest.fixture()
def bench_data() -> Path:
    """The harness's small fixture files (tests/data/bench)."""
    return Path(__file__).resolve().parents[1] / "data" / "bench"


@pytest.fixture()
def sample_path() -> Path:
    """The 24-item OmniGAIA sample copied into tests/data."""
    return TEST_DATA / "omnigaia_sample.json"


@pytest.fixture()
def sample_items(sample_path: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(sample_path.read_text(encoding="utf-8"))
    return items


@pytest.fixture()
def sample_tasks(sample_path: Path) -> list[Task]:
    return load_dataset("omnigaia", sample_path).tasks


@pytest.fixture()
def make_model() -> MakeModel:
    """``make_model(steps, name=...)``: a scripted model that retries errors once, at once."""

    def make(steps: Sequence[ScriptStep], name: str = "scripted:judge") -> Model:
        return scripted_model(steps, name=name, retry=RetryPolicy(max_attempts=2, backoff_s=0.0))

    return make
