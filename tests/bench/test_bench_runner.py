"""The runner through its Python API, with a small stand-in agent and a model keyed on the
question: results per task, failures that never stop a run, concurrency over whole tasks,
seeds, resume, cancellation, setup errors, re-scoring, comparison and error analysis."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from omnilab.agents.base import AgentContext, AgentTask
from omnilab.bench import BenchError, TaskResult, summarize
from omnilab.bench.executor import RunSetupError, task_seed
from omnilab.bench.progress import RunTally
from omnilab.bench.reports import analyze_run, compare_sources, open_source, source_metrics
from omnilab.bench.rescore import rescore_run
from omnilab.bench.run_dir import RunDir, Selection, file_stem, load_results
from omnilab.bench.runner import Components, evaluate, new_config, plan_run
from omnilab.bench.scoring import OmniGaiaScorer, extract_answer
from omnilab.media import synth
from omnilab.models import GenerateConfig, Message, Model, ModelOutput, ToolSpec, Usage
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.providers import scripted
from omnilab.models.providers.scripted import scripted_model
from omnilab.models.retry import RetryPolicy
from omnilab.trajectory import AnswerEvent, MessageAdded, RunEnd, RunStart, read_trajectory

# Each task's question names the reply the model gives: "colour? [say: blue]".
ANSWERS = {"t1": "blue", "t2": "red", "t3": "green", "t4": "blue", "t5": "red", "t6": "blue"}
REPLIES = {"t1": "blue", "t2": "red", "t3": "purple", "t4": "blue", "t5": "pink", "t6": "teal"}


class KeyedAdapter:
    """A model adapter that answers ``<answer>X</answer>`` where the question says ``[say: X]``,
    after ``delay`` seconds; records the seed of every call. Tasks may run in any order."""

    def __init__(self, *, delay: float = 0.0) -> None:
        self.endpoint = "keyed"
        self.secrets: tuple[str, ...] = ()
        self.capabilities = Capabilities(image=True, audio=True, video=True)
        self.delay = delay
        self.seeds: dict[str, int | None] = {}
        self.calls: list[tuple[str, int | None]] = []
        """Every (question, seed), in call order (tasks may share a question)."""

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        await asyncio.sleep(self.delay)
        question = messages[-1].text
        self.seeds[question] = config.seed
        self.calls.append((question, config.seed))
        reply = question.split("[say: ")[1].split("]")[0]
        return ModelOutput.from_text(
            f"I looked. <answer>{reply}</answer>",
            usage=Usage(prompt_tokens=10, completion_tokens=5),
        )


def keyed_model(delay: float = 0.0) -> Model:
    return Model(KeyedAdapter(delay=delay), name="keyed:test", retry=RetryPolicy(max_attempts=1))


class StandInAgent:
    """Writes a minimal trajectory around one model call. ``behaviour`` by task id: ``sleep``
    (past any timeout), ``crash``; ``work`` seconds of non-model work before the call."""

    name = "stand-in"

    def __init__(self, behaviour: dict[str, str] | None = None, work: float = 0.0) -> None:
        self.behaviour = behaviour or {}
        self.work = work
        self.running = 0
        self.most = 0

    async def run(self, task: AgentTask, ctx: AgentContext) -> Any:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            return await self._run(task, ctx)
        finally:
            self.running -= 1

    async def _run(self, task: AgentTask, ctx: AgentContext) -> Any:
        w = ctx.trajectory
        w.emit(RunStart(run_id=w.run_id, task_id=task.id, question=task.question, agent=self.name))
        message = Message.user(task.question)
        w.emit(MessageAdded(message=message))
        what = self.behaviour.get(task.id)
        if what == "sleep":
            await asyncio.sleep(30)
        if what == "crash":
            raise RuntimeError("stand-in agent broke")
        await asyncio.sleep(self.work)  # media work and tools hold the slot too
        ctx.model.sink = w  # a fresh model object per task: its calls go to this trajectory
        output = await ctx.model.generate([message])
        w.emit(AnswerEvent(text=output.text, answer=extract_answer(output.text)))
        w.emit(RunEnd(status="answered", usage=ctx.model.usage, wall_s=0.0, turns=1))
        return read_trajectory(w.path)


def make_dataset(folder: Path, ids: Sequence[str] = tuple(ANSWERS)) -> Path:
    """An OmniGAIA-format file with tiny generated media; Levels and categories alternate."""
    image = synth.make_image(folder / "img.png", size=(32, 24))
    items = [
        {
            "id": task_id,
            "question": f"What colour? [say: {REPLIES[task_id]}]",
            "answer": ANSWERS[task_id],
            "Level": ("Easy", "Hard")[n % 2],
            "category": ("Art", "Sports", "Art")[n % 3],
            "omni_modal_input": [{"type": "image", "id": "image_1", "path": image.name}],
        }
        for n, task_id in enumerate(ids)
    ]
    path = folder / "tasks.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def judge(verdict: str = "Incorrect", n: int = 20) -> Model:
    return scripted_model([scripted.text(verdict)] * n, name="scripted:judge")


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return make_dataset(tmp_path)


def config_for(data: Path, **kw: Any) -> Any:
    return new_config(
        "omnigaia", data, agent="stand-in", model="keyed:test", judges=["scripted:j.json"], **kw
    )


def run(data: Path, out: Path, **kw: Any) -> Any:
    agent = kw.pop("agent", None) or StandInAgent()
    parts = Components(
        agent=agent,
        model=kw.pop("model", None) or keyed_model(),
        scorer=kw.pop("scorer", None) or OmniGaiaScorer(judge()),
    )
    config = kw.pop("config", None) or config_for(data, **kw.pop("config_kw", {}))
    return asyncio.run(evaluate(config, out, components=parts, **kw))


def test_a_run_writes_one_result_per_task_trajectories_and_metrics(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    outcome = run(data, out, concurrency=3)
    folder = RunDir(out)
    results = {r.task_id: r for r in folder.results()}
    assert sorted(results) == sorted(ANSWERS)
    # Hand count: t1, t2, t4 answer their label; the judge calls the others Incorrect.
    assert [t for t, r in sorted(results.items()) if r.judged] == ["t1", "t2", "t4"]
    assert outcome.summary.pass_at_1.correct == 3 and outcome.summary.pass_at_1.total == 6
    # Levels alternate Easy/Hard (t1, t3, t5 Easy); categories cycle Art, Sports, Art.
    levels = outcome.summary.groups["level"]
    assert (levels["Easy"].correct, levels["Easy"].total) == (1, 3)
    assert (levels["Hard"].correct, levels["Hard"].total) == (2, 3)
    categories = outcome.summary.groups["category"]
    assert (categories["Art"].correct, categories["Art"].total) == (2, 4)
    assert (categories["Sports"].correct, categories["Sports"].total) == (1, 2)
    stored = json.loads(folder.metrics_file.read_text())
    assert stored["pass_at_1"]["value"] == pytest.approx(0.5)
    assert results["t3"].prediction == "I looked. <answer>purple</answer>"
    assert results["t3"].extracted == "purple" and results["t3"].usage.total_tokens == 15
    traj = read_trajectory(folder.trajectory_file("t2"))
    assert traj.status == "answered" and traj.answer == "red"
    config = json.loads(folder.config_file.read_text())
    assert config["model"] == "keyed:test" and config["scorer"] == "omnigaia"
    assert config["data_sha256"] and Path(config["data"]).is_absolute()
    assert not (out / "workspaces").exists() or not any((out / "workspaces").iterdir())


def test_failures_are_results_and_never_stop_the_run(tmp_path: Path) -> None:
    data = make_dataset(tmp_path)
    (tmp_path / "gone.png").write_bytes(b"")
    items = json.loads(data.read_text())
    items[4]["omni_modal_input"] = [{"type": "image", "id": "image_1", "path": "missing.png"}]
    data.write_text(json.dumps(items))
    agent = StandInAgent({"t2": "sleep", "t3": "crash"})
    out = tmp_path / "run"
    started = time.perf_counter()
    outcome = run(data, out, agent=agent, concurrency=6, config_kw={"task_timeout_s": 0.5})
    assert time.perf_counter() - started < 10
    results = {r.task_id: r for r in RunDir(out).results()}
    assert len(results) == 6
    assert results["t2"].error == "timeout: no answer within 0.5 s"
    assert results["t3"].error == "agent crashed: RuntimeError: stand-in agent broke"
    assert results["t5"].error is not None and results["t5"].error.startswith("missing media")
    assert "missing.png" in results["t5"].error
    assert results["t1"].error is None and results["t1"].judged
    # Failed runs count as wrong and are reported separately.
    assert outcome.summary.failed_runs == 3
    assert outcome.summary.pass_at_1.total == 6 and outcome.summary.pass_at_1.correct == 2
    # The runner ends the trajectory of a run the agent could not end.
    for task_id in ("t2", "t3"):
        traj = read_trajectory(RunDir(out).trajectory_file(task_id))
        assert traj.status == "error" and traj.events[-2].kind == "error"


def test_concurrency_bounds_whole_tasks_not_only_model_calls(data: Path, tmp_path: Path) -> None:
    agent = StandInAgent(work=0.05)
    run(data, tmp_path / "run", agent=agent, concurrency=2)
    assert agent.most == 2
    agent = StandInAgent(work=0.05)
    run(data, tmp_path / "run4", agent=agent, concurrency=4)
    assert agent.most == 4


def test_seeds_depend_on_run_seed_and_task_only(data: Path, tmp_path: Path) -> None:
    seeds, calls = [], []
    for n, concurrency in enumerate((1, 6)):
        model = keyed_model(delay=0.01 * (n + 1))
        run(data, tmp_path / f"run{n}", model=model, concurrency=concurrency, config_kw={"seed": 7})
        adapter = model.adapter
        assert isinstance(adapter, KeyedAdapter)
        seeds.append(dict(sorted(adapter.seeds.items())))
        calls.append(sorted(adapter.calls, key=str))
    # Two tasks may ask the same question, so compare every call, not the last seed per question
    # (which depends on the order tasks finish).
    assert calls[0] == calls[1]
    assert seeds[0]["What colour? [say: red]"] == task_seed(7, "t2")
    assert len(set(seeds[0].values())) == 5  # one question per distinct reply


def test_resume_skips_finished_tasks_and_repairs_a_cut_line(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(data, out, config_kw={"selection": Selection(limit=3)})
    folder = RunDir(out)
    assert [r.task_id for r in folder.results()] == ["t1", "t2", "t3"] or len(folder.results()) == 3
    # A process killed mid-write leaves a cut-off line.
    with folder.results_file.open("a") as f:
        f.write('{"schema_version": 1, "task_id": "t4", "predi')
    agent = StandInAgent()
    model = keyed_model()
    run(data, out, agent=agent, model=model, resume=True)
    results = load_results(folder.results_file)
    lines = folder.results_file.read_text().splitlines()
    assert len(lines) == 6 and sorted(r.task_id for r in results) == sorted(ANSWERS)
    adapter = model.adapter
    assert isinstance(adapter, KeyedAdapter)
    assert len(adapter.seeds) == 3  # only t4, t5, t6 ran again
    assert json.loads(folder.metrics_file.read_text())["tasks"] == 6


def test_resume_refuses_another_config_and_says_what_differs(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(data, out, config_kw={"selection": Selection(limit=1)})
    with pytest.raises(BenchError, match="already holds a run; pass --resume"):
        plan_run(config_for(data), out)
    other = new_config(
        "omnigaia", data, agent="stand-in", model="keyed:other", judges=["scripted:j.json"], seed=3
    )
    with pytest.raises(BenchError) as info:
        plan_run(other, out, resume=True)
    message = str(info.value)
    assert "model: keyed:test (stored) vs keyed:other (now)" in message
    assert "seed: 0 (stored) vs 3 (now)" in message and "\n" not in message
    # The selection may change: more tasks are just more work.
    plan = plan_run(config_for(data, selection=Selection(limit=4)), out, resume=True)
    assert [t.id for t in plan.todo] == ["t2", "t3", "t4"]
    # The same dataset file, moved, is the same dataset; an edited one is not.
    moved = tmp_path / "moved" / "tasks.json"
    moved.parent.mkdir()
    moved.write_bytes(data.read_bytes())
    (moved.parent / "img.png").write_bytes((tmp_path / "img.png").read_bytes())
    assert len(plan_run(config_for(moved), out, resume=True).todo) == 5
    moved.write_text(moved.read_text().replace("blue", "navy"))
    with pytest.raises(BenchError, match="data_sha256: "):
        plan_run(config_for(moved), out, resume=True)


def test_retry_failed_reruns_only_failed_tasks(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(data, out, agent=StandInAgent({"t3": "crash", "t6": "crash"}))
    plan = plan_run(config_for(data), out, resume=True, retry_failed=True)
    # Retried ids come in the results file's order, which concurrent tasks finish in any order.
    assert sorted(plan.retried) == ["t3", "t6"] and [t.id for t in plan.todo] == ["t3", "t6"]
    # Only failed tasks inside the selection are dropped and run again.
    only_t3 = config_for(data, selection=Selection(ids=["t3"]))
    run(data, out, config=only_t3, resume=True, retry_failed=True)
    results = {r.task_id: r for r in RunDir(out).results()}
    assert len(RunDir(out).results_file.read_text().splitlines()) == 6
    assert results["t3"].error is None and results["t6"].error is not None


def test_cancelling_keeps_finished_results_and_resume_completes(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    parts = Components(
        agent=StandInAgent(), model=keyed_model(delay=0.2), scorer=OmniGaiaScorer(judge())
    )

    async def interrupted() -> None:
        job = asyncio.create_task(evaluate(config_for(data), out, components=parts, concurrency=1))
        while not RunDir(out).results_file.exists() or len(RunDir(out).results()) < 2:
            await asyncio.sleep(0.02)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(interrupted())
    kept = RunDir(out).results()
    assert 2 <= len(kept) < 6
    run(data, out, resume=True)
    lines = RunDir(out).results_file.read_text().splitlines()
    assert sorted(json.loads(line)["task_id"] for line in lines) == sorted(ANSWERS)


def test_a_setup_error_stops_the_run_and_keeps_results(data: Path, tmp_path: Path) -> None:
    class DeniedAdapter:
        endpoint = "denied"
        secrets: tuple[str, ...] = ()
        capabilities = Capabilities()

        async def generate(self, *args: object) -> ModelOutput:
            raise ProviderError(ErrorKind.AUTH, "bad key", status=401)

    bad_judge = Model(DeniedAdapter(), name="denied:judge", retry=RetryPolicy(max_attempts=1))
    with pytest.raises(RunSetupError, match="stopped while scoring t3"):
        run(data, tmp_path / "run", scorer=OmniGaiaScorer(bad_judge), concurrency=1)
    # t1 and t2 were exact matches, scored without the judge, and stay saved.
    assert [r.task_id for r in RunDir(tmp_path / "run").results()] == ["t1", "t2"]


def test_selection_filters_in_dataset_order(data: Path, tmp_path: Path) -> None:
    tasks = plan_run(config_for(data), tmp_path / "x").tasks
    pick = Selection(levels=["hard"], categories=["art"]).apply(tasks)
    assert [t.id for t in pick] == ["t4", "t6"]
    assert [t.id for t in Selection(ids=["t5", "t2"], limit=1).apply(tasks)] == ["t2"]
    with pytest.raises(BenchError, match="no task with id nope"):
        Selection(ids=["nope"]).apply(tasks)
    with pytest.raises(BenchError, match="no task matches"):
        plan_run(config_for(data, selection=Selection(levels=["Medium"])), tmp_path / "y")


def test_file_stems_are_safe_and_distinct() -> None:
    assert file_stem("video_12") == "video_12"
    odd = [file_stem(i) for i in ("a/b", "a_b", "7#2", "../x", ".hidden")]
    assert len(set(odd)) == 5 and odd[1] == "a_b"
    assert all("/" not in s and not s.startswith(".") for s in odd)


def test_cost_from_prices_and_tally(data: Path, tmp_path: Path) -> None:
    from omnilab.config import get_settings

    get_settings().bench.prices["keyed:*"] = (1.0, 2.0)
    outcome = run(data, tmp_path / "run")
    results = RunDir(tmp_path / "run").results()
    assert all(r.cost_usd == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6) for r in results)
    assert outcome.summary.usage.cost_usd == pytest.approx(6 * 20 / 1e6)
    tally = RunTally(results)
    assert tally.summary() == "acc 50.0% (3/6) | 90 tokens | $0.0001"


def test_rescore_writes_a_new_scores_file_and_compare_reads_both(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    run(data, out)
    folder = RunDir(out)
    before = folder.results_file.read_bytes()
    lenient = OmniGaiaScorer(judge("Correct"))
    outcome = asyncio.run(
        rescore_run(folder, scorer_name="omnigaia", judges=["scripted:lenient"], scorer=lenient)
    )
    assert folder.results_file.read_bytes() == before
    assert outcome.path == folder.scores_file("omnigaia-scripted-lenient")
    assert outcome.summary.pass_at_1.correct == 6
    again = asyncio.run(
        rescore_run(folder, scorer_name="omnigaia", judges=["scripted:lenient"], scorer=lenient)
    )
    assert again.info.name == "omnigaia-scripted-lenient-2"
    with pytest.raises(BenchError, match="exists; choose another --name"):
        asyncio.run(rescore_run(folder, scorer_name="omnigaia", judges=[], name=again.info.name))
    source = open_source(out, "omnigaia-scripted-lenient")
    assert source_metrics(source).pass_at_1.correct == 6
    assert (folder.scores_dir / "omnigaia-scripted-lenient.metrics.json").is_file()
    comparison = compare_sources(open_source(out), open_source(outcome.path), groups=("level",))
    assert (comparison.test.only_a, comparison.test.only_b, comparison.test.shared) == (0, 3, 6)
    assert comparison.b.label == "run:omnigaia-scripted-lenient"


def test_analyze_run_shows_the_analyst_each_trajectory(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(data, out, agent=StandInAgent({"t3": "crash"}))
    reply = json.dumps({"categories": ["Visual Perception Error"], "explanation": "wrong colour"})
    analyst = scripted_model([scripted.text(reply)] * 3, name="scripted:analyst")
    analysis = asyncio.run(analyze_run(open_source(out), analyst))
    assert analysis.analysed == 3 and analysis.frequencies["Visual Perception Error"] == 3
    adapter = analyst.adapter
    assert isinstance(adapter, scripted.ScriptedAdapter)
    prompts = [req[0][0].text for req in adapter.requests]
    assert any("stand-in agent broke" in p for p in prompts)  # the trace of the crashed task
    assert any("answer: pink" in p for p in prompts)
    assert json.loads(RunDir(out).analysis_file.read_text())["analysed"] == 3


def test_summaries_from_the_folder_match_the_outcome(data: Path, tmp_path: Path) -> None:
    outcome = run(data, tmp_path / "run")
    results: list[TaskResult] = RunDir(tmp_path / "run").results()
    assert summarize(results).pass_at_1 == outcome.summary.pass_at_1


@pytest.mark.parametrize("syncfs", [False, True])
def test_each_trajectory_is_synced_once_before_the_results_log(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncfs: bool
) -> None:
    import os
    import sys

    from omnilab.bench import result_log

    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        caller = sys._getframe(1).f_code
        if caller.co_filename.endswith("trajectory/store.py"):
            pytest.fail("a task synced its trajectory itself")
        synced.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd)

    def fake_syncfs(fd: int) -> bool:
        if not syncfs:
            return False  # none here: file by file
        # What syncfs covers: every file of the run folder's file system, then the log.
        folder = RunDir(out)
        synced.extend(str(folder.trajectory_file(t)) for t in ANSWERS)
        synced.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        return syncfs

    # Tasks close their trajectories without a sync (no task waits on the disk); the results
    # log syncs them, in the background, before the log itself: with one syncfs of the file
    # system where it can, else file by file.
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(result_log, "_syncfs", fake_syncfs)
    out = tmp_path / "run"
    run(data, out, concurrency=3)
    results = str(RunDir(out).results_file)
    last_results_sync = len(synced) - 1 - synced[::-1].index(results)
    for task in ANSWERS:
        trajectory = str(RunDir(out).trajectory_file(task))
        assert trajectory in synced[:last_results_sync], f"{task}'s trajectory was not synced"
        if not syncfs:
            assert synced.count(trajectory) == 1, f"{task}: {synced.count(trajectory)} syncs"


def test_syncfs_is_called_on_linux(tmp_path: Path) -> None:
    import os
    import sys

    from omnilab.bench.result_log import _syncfs

    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert _syncfs(fd) is sys.platform.startswith("linux")
    finally:
        os.close(fd)


def test_a_plan_names_its_dataset_media_and_run_folder_for_the_sandbox(
    data: Path, tmp_path: Path
) -> None:
    from omnilab.sandbox import private_paths

    out = tmp_path / "masked-run"
    plan_run(config_for(data), out)
    named = private_paths()
    assert str(data.resolve()) in named and str(out.resolve()) in named
