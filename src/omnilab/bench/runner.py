"""The evaluation runner: many tasks, bounded concurrency, results appended as tasks finish.

``plan_run`` loads the dataset, selects the tasks and checks the run folder (a resumed run must
have the same config); ``execute`` runs what is left through a backend and appends each result
to ``results.jsonl`` the moment it exists; ``evaluate`` does both. A run is deterministic in
what it runs: tasks start in dataset order and each task's seed depends only on the run's seed
and the task id, never on scheduling.

Interrupting a run (Ctrl-C, cancellation) cancels the tasks in flight and keeps every result
already written; a killed process loses at most the line being written, which the next
``--resume`` cuts off before appending.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from omnilab import __version__
from omnilab.agents.base import Agent, Budgets
from omnilab.agents.registry import get_agent
from omnilab.bench.backends import Backend, get_backend
from omnilab.bench.datasets import load_dataset, prepare_data
from omnilab.bench.errors import BenchError
from omnilab.bench.executor import TaskExecutor, TaskJob, task_seed
from omnilab.bench.metrics import RunSummary, summarize
from omnilab.bench.rescore import (
    default_scorer,
    judge_objects,
    make_scorer,
    resolve_judges,
)
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import (
    ResultLog,
    RunConfig,
    RunDir,
    Selection,
    redact_url,
    sha256_file,
    write_atomic,
)
from omnilab.bench.scoring import Scorer
from omnilab.bench.task import Task
from omnilab.config import get_settings
from omnilab.models import Model, get_model

__all__ = [
    "Components",
    "RunOutcome",
    "RunPlan",
    "build_executor",
    "evaluate",
    "execute",
    "new_config",
    "plan_run",
]

ResultSink = Callable[[TaskResult], None]


def new_config(
    dataset: str,
    data: Path | None,
    *,
    agent: str,
    model: str,
    media_root: Path | None = None,
    agent_options: Mapping[str, Any] | None = None,
    roles: Mapping[str, str] | None = None,
    tools: Sequence[str] | None = None,
    budgets: Budgets | None = None,
    task_timeout_s: float | None = None,
    scorer: str | None = None,
    judges: Sequence[str] = (),
    seed: int = 0,
    selection: Selection | None = None,
    backend: str = "local",
    concurrency: int | None = None,
) -> RunConfig:
    """A run config with paths made absolute, the dataset file hashed, the scorer defaulted to
    the dataset's and the judges resolved from the settings when none are given."""
    data_path = prepare_data(dataset, data)
    if not data_path.is_file():
        raise BenchError(f"dataset file {data} does not exist; check --data")
    chosen = scorer or default_scorer(dataset)
    return RunConfig(
        dataset=dataset,
        data=data_path,
        data_sha256=sha256_file(data_path),
        media_root=Path(media_root).expanduser().resolve() if media_root is not None else None,
        agent=agent,
        agent_options=dict(agent_options or {}),
        model=redact_url(model),
        roles={k: redact_url(v) for k, v in (roles or {}).items()},
        tools=list(tools) if tools is not None else None,
        budgets=budgets or Budgets(),
        task_timeout_s=task_timeout_s,
        scorer=chosen,
        judges=[redact_url(j) for j in resolve_judges(chosen, judges)],
        seed=seed,
        selection=selection or Selection(),
        backend=backend,
        concurrency=concurrency,
    )


@dataclass
class Components:
    """Live objects that replace what a config names (tests, notebooks, custom agents)."""

    agent: Agent | None = None
    model: Model | None = None
    scorer: Scorer | None = None
    roles: dict[str, Model] = field(default_factory=dict)


def build_executor(config: RunConfig, components: Components | None = None) -> TaskExecutor:
    """The executor of ``config``: agent, models and scorer built from their names, except
    those ``components`` provides. Bad names fail here, before any task starts."""
    parts = components or Components()
    agent = parts.agent or get_agent(config.agent, **config.agent_options)
    # Evaluation caches model replies, so a rerun of a task asks nothing twice.
    model = parts.model or get_model(config.model, cache=True)
    roles = {
        name: parts.roles.get(name) or get_model(m, cache=True) for name, m in config.roles.items()
    }
    roles.update(parts.roles)
    scorer = parts.scorer or make_scorer(config.scorer, judge_objects(config.scorer, config.judges))
    return TaskExecutor(
        agent=agent,
        model=model,
        roles=roles,
        scorer=scorer,
        tools=config.tools,
        budgets=config.budgets,
        timeout_s=config.task_timeout_s,
    )


class RunPlan(BaseModel):
    """What a run will do: the selected tasks, those already finished, and those left."""

    run: Path
    config: RunConfig
    tasks: list[Task]
    """The selected tasks, in dataset order."""
    done: list[TaskResult]
    """Results already in the folder (all of them, selected or not)."""
    todo: list[Task]
    """Selected tasks without a result, in dataset order."""
    retried: list[str] = []
    """Failed tasks whose results are dropped to run them again (``retry_failed``)."""
    notes: list[str] = []


def plan_run(
    config: RunConfig, run_dir: Path, *, resume: bool = False, retry_failed: bool = False
) -> RunPlan:
    """Load the dataset, select the tasks, and check the folder against ``config``.

    Without ``resume`` the folder must not hold a run yet. With it, the stored config must agree
    with ``config`` on everything that decides a result (the :class:`BenchError` lists what
    differs); the selection may change. ``retry_failed`` runs failed tasks again.
    """
    run = RunDir(run_dir)
    notes: list[str] = []
    done: list[TaskResult] = []
    if run.is_run():
        if not resume:
            raise BenchError(
                f"{run.path} already holds a run; pass --resume to continue it, or choose "
                "another --out"
            )
        stored = run.read_config()
        diffs = stored.differences(config)
        if diffs:
            raise BenchError(
                f"cannot resume {run.path}: the config differs ({'; '.join(diffs)}); start a "
                "new run with another --out, or pass the stored values"
            )
        if stored.omnilab_version != __version__:
            notes.append(f"run started with omnilab {stored.omnilab_version}, now {__version__}")
        config = config.model_copy(update={"created": stored.created})
        done = run.results()
    elif resume and run.path.exists() and any(run.path.iterdir()):
        raise BenchError(f"{run.path} is not a run folder (no run.json); cannot resume it")
    loaded = load_dataset(config.dataset, config.data, media_root=config.media_root)
    tasks = config.selection.apply(loaded.tasks)
    if not tasks:
        raise BenchError("no task matches the filters (--level, --category, --ids, --limit)")
    # Only selected tasks: a dropped result outside the selection would never be run again.
    selected = {t.id for t in tasks}
    retried = (
        [r.task_id for r in done if r.error is not None and r.task_id in selected]
        if retry_failed
        else []
    )
    if retried:
        drop = set(retried)
        done = [r for r in done if r.task_id not in drop]
    finished = {r.task_id for r in done}
    todo = [t for t in tasks if t.id not in finished]
    if loaded.missing_media:
        missing = sum(1 for t in todo if t.id in loaded.missing_media)
        if missing:
            notes.append(f"{missing} tasks miss media files; they will fail (omnilab data check)")
    return RunPlan(
        run=run.path,
        config=config,
        tasks=tasks,
        done=done,
        todo=todo,
        retried=retried,
        notes=notes,
    )


class RunOutcome(BaseModel):
    """What a run did and where it wrote."""

    run: Path
    selected: int
    already_done: int
    ran: int
    """Tasks run by this call (their results are appended)."""
    summary: RunSummary
    """Metrics over every result in the folder."""


def _jobs(plan: RunPlan, run: RunDir) -> Iterator[TaskJob]:
    for task in plan.todo:
        yield TaskJob(
            task=task,
            seed=task_seed(plan.config.seed, task.id),
            trajectory=run.trajectory_file(task.id),
            workspace=run.workspace(task.id),
        )


async def execute(
    plan: RunPlan,
    *,
    concurrency: int | None = None,
    components: Components | None = None,
    backend: Backend | None = None,
    on_result: ResultSink | None = None,
) -> RunOutcome:
    """Run ``plan.todo``, appending each result to ``results.jsonl`` as it finishes, then write
    ``metrics.json``. ``concurrency`` defaults to the config's, else ``bench.concurrency``;
    ``on_result`` sees each new result (a progress bar)."""
    run = RunDir(plan.run)
    tasks_at_once = concurrency or plan.config.concurrency or get_settings().bench.concurrency
    # Build first: a bad model name or missing judge fails before the folder is touched.
    executor = build_executor(plan.config, components)
    chosen = backend or get_backend(plan.config.backend)
    run.write_config(plan.config)
    if plan.retried:
        drop = set(plan.retried)
        kept = [r for r in run.results() if r.task_id not in drop]
        write_atomic(run.results_file, "".join(r.model_dump_json() + "\n" for r in kept))
    ran = 0
    async with ResultLog(run.results_file) as log:
        stream = chosen.run(_jobs(plan, run), lambda: executor, concurrency=tasks_at_once)
        async with contextlib.aclosing(stream) as results:
            async for result in results:
                log.append(result)
                ran += 1
                if on_result is not None:
                    on_result(result)
    all_results = run.results()
    summary = summarize(all_results)
    write_atomic(run.metrics_file, summary.model_dump_json(indent=2) + "\n")
    return RunOutcome(
        run=run.path,
        selected=len(plan.tasks),
        already_done=len(plan.tasks) - len(plan.todo),
        ran=ran,
        summary=summary,
    )


async def evaluate(
    config: RunConfig,
    run_dir: Path,
    *,
    resume: bool = False,
    retry_failed: bool = False,
    concurrency: int | None = None,
    components: Components | None = None,
    backend: Backend | None = None,
    on_result: ResultSink | None = None,
) -> RunOutcome:
    """:func:`plan_run` then :func:`execute`: the Python entry point of ``omnilab eval``."""
    plan = plan_run(config, run_dir, resume=resume, retry_failed=retry_failed)
    return await execute(
        plan,
        concurrency=concurrency,
        components=components,
        backend=backend,
        on_result=on_result,
    )
