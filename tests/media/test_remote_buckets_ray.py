"""Ray workers read buckets with the driver's ``[remote.buckets]`` (issue 46): the workers'
own config says nothing, their environment holds the keys (as a node started with them would),
and what they read, they read with the bucket settings the run sent them. Slow: a local Ray."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from test_remote_buckets import _files, _found_under, _secrets, two_readers
from test_remote_eval import _bench, _outcome

from omnilab.bench.backends import get_backend
from omnilab.bench.runner import evaluate, new_config

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


def test_ray_workers_read_a_bucket_with_the_drivers_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local, model = _bench(tmp_path, 2)
    with two_readers(monkeypatch, tmp_path, _files(local), {}) as keys:
        config = new_config("jsonl", "s3://alpha/tasks.jsonl", agent="tir", model=model)
        (tmp_path / "no-config.toml").write_text("")  # the workers' own config: nothing
        if ray.is_initialized():
            pytest.skip("another test's Ray is running in this process")
        # The nodes start with this environment (the keys, no AWS endpoint, no buckets).
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",  # tests send nothing past loopback
            runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}},
        )
        try:
            asyncio.run(
                evaluate(config, tmp_path / "run", concurrency=2, backend=get_backend("ray"))
            )
        finally:
            ray.shutdown()
    assert _outcome(tmp_path / "run") == [
        ("q0", "blue", True, None),
        ("q1", "blue", True, None),
    ]
    assert not _found_under(tmp_path / "run", _secrets(keys))
