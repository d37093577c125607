"""``--backend ray`` on a local Ray with 2 CPUs: the same results as ``local``, trajectories
written by the driver, a dead worker's task run again, resume after a partial run."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnilab.bench.backends import get_backend
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import Components, evaluate, new_config
from omnilab.trajectory import read_trajectory

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",  # tests send nothing past loopback
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    yield
    ray.shutdown()


def dataset(tmp_path: Path, n: int) -> tuple[Path, str]:
    data = tmp_path / "tasks.jsonl"
    rows = [{"id": f"q{i}", "question": f"Colour {i}?", "answer": "blue"} for i in range(n)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = tmp_path / "model.json"
    script.write_text(json.dumps(["<answer>blue</answer>"] * (n + 2)))
    return data, f"scripted:{script}"


def outcome(run: Path) -> list[tuple[str, str | None, bool | None]]:
    rows = RunDir(run).results()
    return sorted((r.task_id, r.extracted, r.judged) for r in rows)


def test_ray_gives_the_results_of_local(local_ray: None, tmp_path: Path) -> None:
    data, model = dataset(tmp_path, 6)
    config = new_config("jsonl", data, agent="tir", model=model, scorer="answer_set")
    local = asyncio.run(evaluate(config, tmp_path / "local", concurrency=3))
    on_ray = asyncio.run(
        evaluate(config, tmp_path / "ray", concurrency=3, backend=get_backend("ray"))
    )
    assert outcome(tmp_path / "ray") == outcome(tmp_path / "local")
    assert on_ray.summary.pass_at_1 == local.summary.pass_at_1
    for i in range(6):  # the driver wrote each trajectory from the worker's copy
        traj = read_trajectory(RunDir(tmp_path / "ray").trajectory_file(f"q{i}"))
        assert traj.status == "answered" and traj.answer == "blue"


def test_a_dead_worker_s_task_runs_again(local_ray: None, tmp_path: Path) -> None:
    from ray_helpers import DyingAgent

    data, model = dataset(tmp_path, 4)
    marker = tmp_path / "die-once"
    marker.write_text("")
    config = new_config("jsonl", data, agent="tir", model=model, scorer="answer_set")
    parts = Components(agent=DyingAgent(marker))
    done = asyncio.run(
        evaluate(
            config, tmp_path / "run", concurrency=2, components=parts, backend=get_backend("ray")
        )
    )
    assert not marker.exists()  # the worker died once on q1
    assert done.failed == 0 and done.summary.pass_at_1.correct == 4
    assert [r.task_id for r in RunDir(tmp_path / "run").results()].count("q1") == 1


def test_a_partial_ray_run_resumes(local_ray: None, tmp_path: Path) -> None:
    data, model = dataset(tmp_path, 5)
    config = new_config("jsonl", data, agent="tir", model=model, scorer="answer_set")
    out = tmp_path / "run"
    asyncio.run(evaluate(config, out, concurrency=2, backend=get_backend("ray")))
    results = RunDir(out).results_file
    kept = results.read_text().splitlines()[:2]  # as if the driver was killed after two
    results.write_text("".join(line + "\n" for line in kept))
    again = asyncio.run(
        evaluate(config, out, resume=True, concurrency=2, backend=get_backend("ray"))
    )
    assert (again.already_done, again.ran) == (2, 3)
    assert sorted(r.task_id for r in RunDir(out).results()) == [f"q{i}" for i in range(5)]


_TWO_RUNS = """
import asyncio, sys
from pathlib import Path
from omnilab.bench.backends import get_backend
from omnilab.bench.runner import evaluate, new_config
data, model, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
config = new_config("jsonl", data, agent="tir", model=model, scorer="answer_set")
for name in ("first", "second"):  # each asyncio.run ends its loop and its worker threads
    done = asyncio.run(evaluate(config, out / name, concurrency=2, backend=get_backend("ray")))
    print(name, done.summary.pass_at_1.correct)
"""


def test_the_backend_s_own_ray_outlives_one_run(tmp_path: Path) -> None:
    # A Ray the backend starts itself must serve a second run in the same process: started on
    # an asyncio worker thread, its node died with that thread when the first loop closed.
    import subprocess
    import sys

    data, model = dataset(tmp_path, 2)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run(
        [sys.executable, "-c", _TWO_RUNS, str(data), model, str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["first", "2", "second", "2"], proc.stdout


def test_tree_exploration_runs_on_ray_and_brings_its_branches_back(
    local_ray: None, tmp_path: Path
) -> None:
    # The worker keeps branches/<task>/ beside its temporary trajectory; the driver writes them
    # into the run folder with the trajectory.
    from omnilab.train.explore import ExploreOptions
    from omnilab.train.explore_run import explore, explore_config

    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps({"id": "t1", "question": "6*7?", "answers": ["42"]}) + "\n")
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps(["<answer>41</answer>", "<answer>42</answer>"]))
    verdicts = [{"candidate": 1, "keep": False, "score": 0.0}, {"candidate": 2, "keep": True}]
    verifier = tmp_path / "verifier.json"
    verifier.write_text(json.dumps([json.dumps({"verdicts": verdicts})]))
    config = explore_config(
        "jsonl", data, agent="tir", model=f"scripted:{agent}", verifier=f"scripted:{verifier}",
        options=ExploreOptions(branches=2, parallel=False), scorer="answer_set", backend="ray",
    )  # fmt: skip
    out = tmp_path / "run"
    asyncio.run(explore(config, out))
    assert read_trajectory(RunDir(out).trajectory_file("t1")).answer == "42"
    assert sorted(p.name for p in (out / "branches" / "t1").iterdir()) == [
        "r.0.jsonl",
        "r.1.jsonl",
        "tree.jsonl",
    ]


def test_cancelling_a_ray_run_kills_its_workers_and_keeps_no_partial_result(
    local_ray: None, tmp_path: Path
) -> None:
    # Ctrl-C cancels the run's main task: the actors go (their CPUs come back), the tasks in
    # flight leave no result, and a resumed run would run them again.
    data = tmp_path / "tasks.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": "?", "answer": "a"}) + "\n" for i in range(4)
        )
    )
    script = tmp_path / "model.json"
    script.write_text(json.dumps([{"timeout": True, "seconds": 60}] * 8))  # every call hangs
    config = new_config("jsonl", data, agent="tir", model=f"scripted:{script}", scorer="answer_set")
    out = tmp_path / "run"

    async def scenario() -> None:
        run = asyncio.create_task(evaluate(config, out, concurrency=2, backend=get_backend("ray")))
        deadline = asyncio.get_running_loop().time() + 60
        while ray.available_resources().get("CPU", 0.0) >= 2.0:  # wait for the actors
            assert asyncio.get_running_loop().time() < deadline, "the actors never started"
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)  # tasks in flight
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(scenario())
    freed = False
    for _ in range(100):
        if ray.available_resources().get("CPU", 0.0) >= 2.0:
            freed = True
            break
        time.sleep(0.2)
    assert freed, "the run's actors still hold their CPUs after the cancel"
    assert RunDir(out).results() == []
