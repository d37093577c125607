"""The summary's numpy is imported in the background a moment after the run starts (while the
first tasks wait on the model), not with it: the import holds the interpreter lock, and started
with the run it slowed the setting up of the first tasks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from test_bench_runner import StandInAgent, config_for, judge, keyed_model, make_dataset

from omnilab.bench import runner
from omnilab.bench.runner import Components, evaluate
from omnilab.bench.scoring import OmniGaiaScorer


def _record(monkeypatch: pytest.MonkeyPatch, agent: StandInAgent) -> list[tuple[str, float, int]]:
    calls: list[tuple[str, float, int]] = []
    monkeypatch.setattr(
        runner,
        "import_in_background",
        lambda name: calls.append((name, time.perf_counter(), agent.running)),
    )
    return calls


async def _evaluate(data: Path, out: Path, agent: StandInAgent, delay: float) -> None:
    parts = Components(agent=agent, model=keyed_model(delay=delay), scorer=OmniGaiaScorer(judge()))
    await evaluate(config_for(data), out, components=parts)


def test_numpy_is_imported_while_the_first_tasks_wait_on_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = StandInAgent()
    calls = _record(monkeypatch, agent)
    started = time.perf_counter()
    asyncio.run(_evaluate(make_dataset(tmp_path), tmp_path / "run", agent, delay=0.4))
    assert [name for name, _, _ in calls] == ["numpy.ma"]
    _, at, running = calls[0]
    assert at - started >= runner._NUMPY_AFTER_S
    assert running > 0  # tasks were in flight, waiting on the model


def test_a_run_shorter_than_the_wait_leaves_no_import_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = StandInAgent()
    calls = _record(monkeypatch, agent)

    async def run_then_wait() -> None:
        monkeypatch.setattr(runner, "_NUMPY_AFTER_S", 30.0)  # the run ends well before it
        await _evaluate(make_dataset(tmp_path), tmp_path / "run", agent, delay=0.0)
        monkeypatch.setattr(runner, "_NUMPY_AFTER_S", 0.1)
        await asyncio.sleep(0.3)

    asyncio.run(run_then_wait())
    assert calls == []
