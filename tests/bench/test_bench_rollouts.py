"""Runner features through the Python API: several samples per task (results, trajectories,
seeds, resume and metrics per sample), the picklable executor recipe and the ``processes``
backend, scorers that read the trajectory, the dead-endpoint stop, resuming with operational
changes, the run header and the per-endpoint limit."""

from __future__ import annotations

import asyncio
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from test_bench_runner import (
    ANSWERS,
    KeyedAdapter,
    StandInAgent,
    config_for,
    judge,
    keyed_model,
    make_dataset,
)

from omnilab.bench import AnswerSet, BenchError, Score, Task, TaskResult
from omnilab.bench.backends import ProcessBackend, get_backend
from omnilab.bench.executor import task_seed
from omnilab.bench.results import unequal_failures
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import (
    Components,
    EndpointDownError,
    ExecutorRecipe,
    build_executor,
    evaluate,
    new_config,
    plan_run,
)
from omnilab.bench.samples import pass_at_k, sample_ks, sample_stats
from omnilab.bench.scoring import AnswerSetMatch, OmniGaiaScorer
from omnilab.config import get_settings
from omnilab.models import GenerateConfig, Message, Model, ModelOutput, ToolSpec
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.retry import RetryPolicy
from omnilab.trajectory import Trajectory, read_trajectory


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return make_dataset(tmp_path)


def run(data: Path, out: Path, **kw: Any) -> Any:
    parts = Components(
        agent=kw.pop("agent", None) or StandInAgent(),
        model=kw.pop("model", None) or keyed_model(),
        scorer=kw.pop("scorer", None) or OmniGaiaScorer(judge(n=100)),
    )
    config = kw.pop("config", None) or config_for(data, **kw.pop("config_kw", {}))
    return asyncio.run(evaluate(config, out, components=parts, **kw))


def test_samples_give_one_result_and_trajectory_per_task_and_sample(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    model = keyed_model()
    outcome = run(data, out, model=model, config_kw={"samples": 3, "seed": 5})
    folder = RunDir(out)
    keys = sorted(r.key for r in folder.results())
    assert keys == sorted((t, k) for t in ANSWERS for k in range(3))
    assert outcome.ran == 18 and outcome.selected == 18
    for task_id in ANSWERS:
        for k in range(3):
            traj = read_trajectory(folder.trajectory_file(task_id, k))
            assert traj.status == "answered"
    assert folder.trajectory_file("t1", 0).name == "t1.jsonl"
    assert folder.trajectory_file("t1", 2).name == "t1~2.jsonl"
    # Every sample has its own seed; sample 0 keeps the seed of a run without samples.
    seeds = {task_seed(5, t, k) for t in ANSWERS for k in range(3)}
    assert len(seeds) == 18 and task_seed(5, "t1", 0) == task_seed(5, "t1")
    stats = outcome.summary.samples
    assert stats is not None and stats.samples == 3 and stats.tasks == 6
    # The keyed model answers alike every time: t1, t2, t4 right in every sample.
    assert stats.per_sample == {0: 0.5, 1: 0.5, 2: 0.5} and stats.mean == 0.5
    assert stats.pass_at_k == {1: 0.5, 2: 0.5, 3: 0.5}
    stored = json.loads(folder.metrics_file.read_text())
    assert stored["samples"]["pass_at_k"]["3"] == 0.5


def test_resume_works_per_sample(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(data, out, config_kw={"samples": 2})
    # A cut-off run: sample 1 of t3 is lost.
    folder = RunDir(out)
    kept = [r for r in folder.results() if r.key != ("t3", 1)]
    folder.results_file.write_text("".join(r.model_dump_json() + "\n" for r in kept))
    plan = plan_run(config_for(data, samples=3), out, resume=True)
    expected = [(t, k) for t in ANSWERS for k in (1, 2) if k == 2 or t == "t3"]
    assert [(r.id, r.sample) for r in plan.todo] == expected  # dataset order, then samples
    agent = StandInAgent()
    outcome = run(data, out, agent=agent, resume=True, config_kw={"samples": 3})
    assert outcome.ran == 7 and outcome.already_done == 11
    assert len(RunDir(out).results()) == 18


def verdicts(task_id: str, values: list[bool | None]) -> list[TaskResult]:
    task = Task(id=task_id, dataset="t", question="q", answers=AnswerSet(label="a"))
    return [
        TaskResult.for_task(
            task,
            sample=k,
            score=Score(scorer="x", value=float(bool(v)), correct=v),
        )
        for k, v in enumerate(values)
    ]


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    # Task a: 1 of 3 right; b: 3 of 3; c: 0 of 2 decided (the third undecided).
    results = [
        *verdicts("a", [True, False, False]),
        *verdicts("b", [True, True, True]),
        *verdicts("c", [False, None, False]),
    ]
    # pass@1 per task: 1/3, 1, 0; pass@2: 1 - C(2,2)/C(3,2) = 2/3, 1, 0; pass@3: c has n=2.
    assert pass_at_k(results, 1) == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert pass_at_k(results, 2) == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert pass_at_k(results, 3) == pytest.approx((1 + 1) / 2)
    assert pass_at_k(results, 4) is None
    stats = sample_stats(results)
    assert stats is not None and stats.per_sample == {0: 2 / 3, 1: 0.5, 2: 1 / 3}
    assert stats.mean == pytest.approx((2 / 3 + 0.5 + 1 / 3) / 3)
    assert sample_ks(1) == [1] and sample_ks(3) == [1, 2, 3] and sample_ks(8) == [1, 2, 4, 8]
    assert sample_stats(verdicts("a", [True])) is None


def outcome_rows(out: Path) -> list[tuple[Any, ...]]:
    return sorted(
        (r.task_id, r.sample, r.prediction, r.extracted, r.judged, r.error, r.usage.total_tokens)
        for r in RunDir(out).results()
    )


def test_processes_backend_gives_the_same_results_as_local(data: Path, tmp_path: Path) -> None:
    kw: dict[str, Any] = {"config_kw": {"samples": 2}, "scorer": AnswerSetMatch()}
    run(data, tmp_path / "local", **kw)
    outcome = run(data, tmp_path / "procs", backend=ProcessBackend(workers=2), **kw)
    assert outcome.ran == 12
    assert outcome_rows(tmp_path / "procs") == outcome_rows(tmp_path / "local")
    assert len(outcome_rows(tmp_path / "local")) == 12
    # The trajectories were written by the workers, where the jobs said.
    traj = read_trajectory(RunDir(tmp_path / "procs").trajectory_file("t2", 1))
    assert traj.status == "answered" and traj.answer == "red"
    assert isinstance(get_backend("processes"), ProcessBackend)


def test_the_executor_recipe_pickles_and_an_unpicklable_one_is_refused(
    data: Path, tmp_path: Path
) -> None:
    script = tmp_path / "m.json"
    script.write_text(json.dumps(["<answer>blue</answer>"]))
    config = new_config(
        "omnigaia", data, agent="tir", model=f"scripted:{script}", scorer="answer_set"
    )
    recipe = pickle.loads(pickle.dumps(ExecutorRecipe(config, tasks_at_once=40)))
    executor = recipe()
    assert executor.model.name == f"scripted:{script}" and executor.model.concurrency == 40
    assert executor.model.cache is not None  # the run's cache setting reaches the model
    assert ExecutorRecipe(config.model_copy(update={"cache": False}))().model.cache is None

    class Local:  # a class inside a function does not pickle
        name = "local-only"

    parts = Components(agent=Local(), model=keyed_model(), scorer=AnswerSetMatch())  # type: ignore[arg-type]
    with pytest.raises(BenchError, match="cannot send this run to worker processes"):
        asyncio.run(
            evaluate(config_for(data), tmp_path / "x", components=parts, backend=ProcessBackend())
        )


class TrajectoryScorer:
    """A scorer that declares it needs the trajectory: right when the agent made one call."""

    needs_trajectory = True

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def score(self, task: Task, prediction: str, *, trajectory: Trajectory) -> Score:
        self.seen.append(len(trajectory.model_calls))
        return Score(scorer="calls", value=1.0, correct=len(trajectory.model_calls) == 1)


def test_a_scorer_that_needs_the_trajectory_gets_it(data: Path, tmp_path: Path) -> None:
    scorer = TrajectoryScorer()
    outcome = run(data, tmp_path / "run", scorer=scorer)
    assert scorer.seen == [1] * 6 and outcome.summary.pass_at_1.correct == 6


class DownAdapter(KeyedAdapter):
    """Answers the first ``ok`` calls, then cannot connect."""

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.endpoint = "down"
        self.ok = ok
        self.calls = 0

    async def generate(
        self, messages: list[Message], tools: list[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        self.calls += 1
        if self.calls > self.ok:
            raise ProviderError(ErrorKind.CONNECTION, "cannot connect to http://127.0.0.1:9")
        return await super().generate(messages, tools, config)


class ModelErrorAgent(StandInAgent):
    """Ends its run with an error event when the model call fails (as ``tir`` does)."""

    async def _run(self, task: Any, ctx: Any) -> Any:
        from omnilab.models import ModelError
        from omnilab.trajectory import ErrorEvent, RunEnd

        try:
            return await super()._run(task, ctx)
        except ModelError as e:
            w = ctx.trajectory
            w.emit(ErrorEvent(error_kind="model", message=str(e)))
            w.emit(RunEnd(status="error", wall_s=0.0, turns=1))
            return read_trajectory(w.path)


def test_a_dead_endpoint_stops_the_run_and_resume_runs_those_tasks(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    down = Model(DownAdapter(ok=2), name="down:m", retry=RetryPolicy(max_attempts=1))
    with pytest.raises(EndpointDownError, match="3 tasks in a row failed to connect"):
        run(data, out, model=down, agent=ModelErrorAgent(), concurrency=1)
    # The two answered tasks are kept; the three that failed to connect are not written.
    assert sorted(r.task_id for r in RunDir(out).results()) == ["t1", "t2"]
    outcome = run(data, out, agent=ModelErrorAgent(), resume=True)
    assert outcome.ran == 4 and outcome.failed == 0


def test_a_connection_failure_between_answers_is_an_ordinary_failure(
    data: Path, tmp_path: Path
) -> None:
    class Flaky(KeyedAdapter):
        async def generate(self, messages: Any, tools: Any, config: Any) -> ModelOutput:
            if "purple" in messages[-1].text:
                raise ProviderError(ErrorKind.CONNECTION, "reset")
            return await super().generate(messages, tools, config)

    model = Model(Flaky(), name="flaky:m", retry=RetryPolicy(max_attempts=1))
    outcome = run(data, tmp_path / "run", model=model, agent=ModelErrorAgent(), concurrency=1)
    results = {r.task_id: r for r in RunDir(tmp_path / "run").results()}
    assert len(results) == 6 and outcome.failed == 1
    assert results["t3"].error_kind == "connection" and results["t3"].model_calls == 1


def test_resume_accepts_a_moved_endpoint_and_refuses_another_model(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"

    def config(model: str, **kw: Any) -> Any:
        return new_config(
            "omnigaia", data, agent="stand-in", model=model, judges=["scripted:j.json"], **kw
        )

    first = config("vllm:qwen@http://gpu-a:8000/v1", task_timeout_s=60.0, concurrency=4)
    parts = Components(agent=StandInAgent(), model=keyed_model(), scorer=AnswerSetMatch())
    asyncio.run(evaluate(first.model_copy(update={"selection": first.selection.model_copy(update={"limit": 2})}), out, components=parts))  # fmt: skip
    moved = config("vllm:qwen@http://gpu-b:9000/v1", task_timeout_s=120.0, concurrency=16)
    plan = plan_run(moved, out, resume=True)
    assert any("http://gpu-a:8000/v1 -> vllm:qwen@http://gpu-b:9000/v1" in c for c in plan.changes)
    assert any(c.startswith("concurrency: 4 -> 16") for c in plan.changes)
    assert any(c.startswith("task_timeout_s: 60.0 -> 120.0") for c in plan.changes)
    asyncio.run(evaluate(moved, out, resume=True, components=parts))
    stored = RunDir(out).read_config()
    assert stored.model.endswith("gpu-b:9000/v1") and len(stored.changes) == 1
    assert stored.changes[0].changes == plan.changes
    for other, what in (
        (config("vllm:llama@http://gpu-b:9000/v1"), "model: "),
        (config("vllm:qwen@http://gpu-b:9000/v1", agent_options={"mode": "active"}), "agent_options"),
        (config("vllm:qwen@http://gpu-b:9000/v1", scorer="omniagent"), "scorer: "),
    ):  # fmt: skip
        with pytest.raises(BenchError, match=what):
            plan_run(other, out, resume=True)


def test_the_header_is_recorded_and_warns_about_a_model_without_flags(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    seen: list[Any] = []
    outcome = run(data, out, on_header=seen.append, concurrency=3)
    header = json.loads(RunDir(out).config_file.read_text())["header"]
    assert seen and seen[0] == outcome.header
    assert header["agent"] == "stand-in" and header["tasks"] == 6 and header["concurrency"] == 3
    assert header["dataset"] == "tasks.json" and header["adapter"] == "omnigaia"
    assert header["models"]["judge"] == "scripted:j.json" and header["cache"] is True
    # keyed:test has no provider, family or setting that knows it: text-only, with advice.
    assert any("no known capability flags" in w and "models.capabilities" in w for w in header["warnings"])  # fmt: skip


def test_the_header_names_the_mode_and_why(data: Path, tmp_path: Path) -> None:
    from omnilab.bench.header import render_header, run_header

    omni = Model(KeyedAdapter(), name="vllm:qwen2.5-omni-7b@http://h/v1")
    omni.adapter.capabilities = Capabilities(image=True, audio=True, video=True)
    tasks = plan_run(config_for(data), tmp_path / "x").tasks
    header = run_header(agent="tir", model=omni, task_files=[t.files for t in tasks])
    assert header.mode == "native" and header.warnings == []
    assert "family table '*omni*'" in header.capabilities
    blind = Model(KeyedAdapter(), name="vllm:mystery@http://h/v1")
    blind.adapter.capabilities = Capabilities()
    header = run_header(agent="tir", model=blind, task_files=[t.files for t in tasks])
    lines = render_header(header)
    assert header.mode == "evidence" and "capability flags" in lines[0]
    assert any(line.startswith("warning: vllm:mystery") for line in lines)
    assert any("evidence mode" in w for w in header.warnings)
    # Only tir has an evidence mode: another agent's warning does not promise one.
    [other] = run_header(agent="master", model=blind).warnings
    assert "the master agent treats it as text-only" in other and "evidence" not in other
    forced = run_header(agent="tir", model=blind, agent_options={"mode": "tools"})
    assert forced.mode == "tools" and forced.mode_reason == "set by the agent option mode"
    get_settings().models.capabilities["vllm:mystery"] = {"image": True}
    assert "models.capabilities 'vllm:mystery'" in run_header(agent="tir", model=blind).capabilities


def test_the_endpoint_limit_is_lifted_unless_set_explicitly(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.bench.header import describe_limits
    from omnilab.models import concurrency_plan

    config = new_config(
        "omnigaia", data, agent="tir", model="vllm:m@http://127.0.0.1:9/v1", scorer="answer_set"
    )
    lifted = build_executor(config, tasks_at_once=64)
    assert lifted.model.concurrency == 64
    line, warnings = describe_limits(concurrency_plan({"agent": lifted.model}, 64))
    assert (line, warnings) == (
        "up to 64 model calls per endpoint (lifted to the task concurrency)",
        [],
    )
    few = build_executor(config, tasks_at_once=4)
    assert few.model.concurrency == 16  # the default already allows 4
    line, _ = describe_limits(concurrency_plan({"agent": few.model}, 4))
    assert line.endswith("(models.concurrency default)")
    # A live model passed in keeps the limit it was built with.
    live = Model(few.model.adapter, name="live", concurrency=3)
    kept_live = build_executor(config, Components(model=live), tasks_at_once=64)
    assert kept_live.model.concurrency == 3
    monkeypatch.setenv("OMNILAB_MODELS__CONCURRENCY", "8")
    get_settings.cache_clear()
    kept = build_executor(config, tasks_at_once=64)
    assert kept.model.concurrency == 8
    line, warnings = describe_limits(concurrency_plan({"agent": kept.model}, 64))
    assert line == "up to 8 model calls per endpoint (models.concurrency=8, set explicitly)"
    assert warnings[0].startswith("effective concurrency 8, not 64: ")


def test_unequal_failures_name_the_tasks() -> None:
    task = Task(id="q1", dataset="t", question="q", answers=AnswerSet(label="a"))
    ok = TaskResult.for_task(task, score=Score(scorer="x", value=1.0, correct=True))
    failed = TaskResult.for_task(task, error="timeout: no answer within 1 s")
    message = unequal_failures([failed], [ok], labels=("runA", "runB"))
    assert message == "unequal failures: 1 failed in runA only (q1)"
    assert unequal_failures([failed], [failed]) is None
