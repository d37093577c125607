"""Fixtures of the report tests: synthetic run folders and the reports built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnilab.report import build_report
from omnilab.report.synthetic import write_synthetic_run

TASKS = 24


@pytest.fixture(scope="session")
def run_a(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic run of 24 tasks (frames, audio, a purge, a hostile page in task 0)."""
    return write_synthetic_run(tmp_path_factory.mktemp("runs") / "run-a", tasks=TASKS)


@pytest.fixture(scope="session")
def run_b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same tasks, right and wrong elsewhere (for comparisons)."""
    return write_synthetic_run(tmp_path_factory.mktemp("runs") / "run-b", tasks=TASKS, seed=1)


@pytest.fixture(scope="session")
def report_a(run_a: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder of ``run_a``."""
    out = tmp_path_factory.mktemp("report-a")
    build_report([run_a], out)
    return out


@pytest.fixture(scope="session")
def report_ab(run_a: Path, run_b: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The comparison report of ``run_a`` and ``run_b``."""
    out = tmp_path_factory.mktemp("report-ab")
    build_report([run_a, run_b], out)
    return out
