"""The run configuration ``omnilab eval`` builds, as library functions the Python API uses too
(:mod:`omnilab.bench.run_request`): what was given, else the resumed run's, else the preset's or
the settings' default."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnilab.bench.errors import BenchError
from omnilab.bench.protocols import get_protocol
from omnilab.bench.run_dir import RunDir
from omnilab.bench.run_request import (
    RunRequest,
    default_run_dir,
    request_config,
    resumed_config,
)
from omnilab.config import get_settings

DATA = Path(__file__).resolve().parents[1] / "data" / "bench" / "generic.jsonl"


def _request(**given: object) -> RunRequest:
    base: dict[str, object] = {"dataset": "jsonl", "data": DATA, "model": "openai:gpt-4o-mini"}
    return RunRequest(**{**base, **given})  # type: ignore[arg-type]


def test_a_new_run_gets_the_settings_defaults_and_what_was_given() -> None:
    config = request_config(_request(seed=7, ids=["g1"], max_turns=3, roles={"judge": "x:y"}))
    settings = get_settings()
    assert (config.dataset, config.agent, config.model) == ("jsonl", "tir", "openai:gpt-4o-mini")
    assert config.concurrency == settings.bench.concurrency
    assert config.task_timeout_s == settings.bench.task_timeout_s
    assert (config.seed, config.samples, config.cache, config.backend) == (7, 1, True, "local")
    assert config.selection.ids == ["g1"] and config.budgets.max_turns == 3
    assert config.roles == {**settings.agents.roles, "judge": "x:y"}


def test_a_resumed_run_keeps_its_stored_options_unless_given_again(tmp_path: Path) -> None:
    first = request_config(_request(seed=5, levels=["2"], concurrency=2, max_turns=4))
    (tmp_path / "run").mkdir()
    RunDir(tmp_path / "run").write_config(first)
    stored = resumed_config(tmp_path / "run", resume=True)
    assert stored is not None and stored.seed == 5
    again = request_config(RunRequest(concurrency=9, max_tokens=100), stored)
    assert (again.dataset, again.seed, again.selection.levels) == ("jsonl", 5, ["2"])
    assert again.concurrency == 9
    assert (again.budgets.max_turns, again.budgets.max_tokens) == (4, 100)


def test_a_preset_sets_the_agent_and_task_timeout_it_names() -> None:
    preset = get_protocol("omnigaia-paper")
    config = request_config(_request(protocol="omnigaia-paper", judges=["openai:gpt-4o"]))
    assert config.agent == preset.agent and config.protocol == "omnigaia-paper"
    assert config.task_timeout_s == (preset.task_timeout_s or get_settings().bench.task_timeout_s)
    given = _request(protocol="omnigaia-paper", agent="ota", judges=["openai:gpt-4o"])
    assert request_config(given).agent == "ota"


def test_user_mistakes_are_bench_errors(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="--resume needs --out"):
        resumed_config(None, resume=True)
    with pytest.raises(BenchError, match="--retry-failed needs --resume"):
        resumed_config(tmp_path, resume=False, retry_failed=True)
    assert resumed_config(tmp_path / "empty", resume=True) is None  # no run there yet
    with pytest.raises(BenchError, match="name the dataset"):
        request_config(RunRequest())
    with pytest.raises(BenchError, match="--missing-media is fail or drop"):
        request_config(_request(missing_media="skip"))
    assert request_config(_request(missing_media="drop")).missing_media == "drop"


def test_a_new_run_folder_is_named_after_dataset_agent_and_time() -> None:
    folder = default_run_dir(request_config(_request(agent="ota")))
    assert folder.parent == get_settings().bench.runs_dir
    assert folder.name.startswith("jsonl-ota-") and len(folder.name) == len("jsonl-ota-") + 15
    assert not RunDir(folder).is_run()
