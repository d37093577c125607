"""The acceptance test of inputs at URLs on a cluster without shared storage: a local Ray of
two nodes (``ray start --head`` plus a second node, each with its own temp folder and its own
media cache), the dataset and its media only in a bucket (moto's S3 server on 127.0.0.1).
Each worker fetches its task's inputs into its node's cache; the driver fetches none of them;
the results of 20 tasks, each with a video and an audio file, are those of a local run from the
same files. Slow: ~40 s on a shared 2-core machine, most of it starting the two Ray nodes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from omnilab.bench.runner import evaluate, new_config

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "media"))
from remote_stores import free_port, s3_store  # noqa: E402
from test_remote_eval import _bench, _no_secret_under, _outcome, _upload  # noqa: E402

RAY = Path(sys.executable).with_name("ray")
TASKS = 20


@contextmanager
def _node(args: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """One Ray node in the foreground (``--block``), in its own process group, ended by that
    group's id only (never ``ray stop``, which would end every Ray on the machine)."""
    proc = subprocess.Popen(
        [str(RAY), "start", "--block", "--disable-usage-stats", *args],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=20)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


def _wait_for_nodes(address: str, n: int, timeout: float) -> None:
    code = (
        "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False); "
        "print(sum(1 for x in ray.nodes() if x['Alive']))"
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = subprocess.run(
            [sys.executable, "-c", code, address], capture_output=True, text=True, timeout=60
        )
        if proc.returncode == 0 and proc.stdout.strip() == str(n):
            return
        time.sleep(2)
    pytest.skip(f"a {n}-node local Ray did not start within {timeout:.0f} s on this machine")


def _eval_on(address: str, model: str, out: Path) -> None:
    """``omnilab eval --backend ray`` against the cluster, from a fresh driver process (as a user
    runs it; a Ray another test initialized in this process would not be this cluster)."""
    env = {**os.environ, "OMNILAB_BENCH__RAY_ADDRESS": address}
    cmd = ["eval", "jsonl", "--data", "s3://bench/tasks.jsonl", "--agent", "tir"]
    cmd += ["--model", model, "--backend", "ray", "-c", "2", "--out", str(out), "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-m", "omnilab", *cmd],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_nodes_without_shared_storage_give_the_local_results(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local, model = _bench(tmp_path, TASKS)
    config = new_config("jsonl", local / "tasks.jsonl", agent="tir", model=model)
    asyncio.run(evaluate(config, tmp_path / "run-local", concurrency=2))
    # Ray 2.5x turns token authentication on by default, with the token in the home folder
    # that every Ray on this machine shares: this test's own cluster goes without.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with s3_store(monkeypatch) as s3:
        _upload(s3, local, "bench")
        port = free_port()
        base = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
        # Loopback only: tests send nothing to the machine's other addresses.
        address = f"127.0.0.1:{port}"
        # A short temp folder: Ray's socket paths under it must fit AF_UNIX's 107 characters.
        with tempfile.TemporaryDirectory(
            prefix="omnilab-test-ray-", dir="/tmp", ignore_cleanup_errors=True
        ) as temp:
            head = [
                "--head",
                f"--port={port}",
                "--node-ip-address=127.0.0.1",
                "--num-cpus=1",
                "--include-dashboard=false",
                f"--temp-dir={temp}",
            ]
            second = [f"--address={address}", "--num-cpus=1", "--node-ip-address=127.0.0.1"]
            with _node(head, {**base, "OMNILAB_CACHE_DIR": str(tmp_path / "node1")}):
                _wait_for_nodes(address, 1, timeout=120)
                with _node(second, {**base, "OMNILAB_CACHE_DIR": str(tmp_path / "node2")}):
                    _wait_for_nodes(address, 2, timeout=120)
                    _eval_on(address, model, tmp_path / "run-ray")
    assert _outcome(tmp_path / "run-ray") == _outcome(tmp_path / "run-local")
    # Each node fetched into its own cache; the driver fetched only the dataset file.
    fetched = {
        node: sorted(
            p.name
            for p in (tmp_path / node / "media").rglob("r-*")
            if p.is_file() and p.suffix in (".mp4", ".wav")
        )
        for node in ("node1", "node2", "cache")
    }
    assert fetched["node1"] and fetched["node2"], fetched
    assert fetched["cache"] == []
    # Every task's video and audio were fetched on the node that ran it.
    assert len(set(fetched["node1"]) | set(fetched["node2"])) == 2 * TASKS
    _no_secret_under(tmp_path / "run-ray")
