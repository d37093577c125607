"""The evaluation runner: many tasks, bounded concurrency, results appended as tasks finish.

``plan_run`` loads the dataset, selects the tasks and checks the run folder (a resumed run must
have the same config); ``execute`` runs what is left through a backend and appends each result
to ``results.jsonl`` the moment it exists; ``evaluate`` does both. A run is deterministic in
what it runs: tasks start in dataset order and each task's seed depends only on the run's seed,
the task id and the sample index, never on scheduling. With ``samples = K`` every task runs K
times (samples 0 .. K-1), each with its own seed, result and trajectory.

A dead endpoint stops the run: after :data:`DEAD_ENDPOINT_FAILURES` tasks in a row fail on a
model connection error, :class:`EndpointDownError` is raised and those tasks' results are not
written, so ``--resume`` runs them again.

Interrupting a run (Ctrl-C, cancellation) cancels the tasks in flight and keeps every result
already written; a killed process loses at most the line being written, which the next
``--resume`` cuts off before appending.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from omnilab._lazy import import_in_background
from omnilab._ownfolders import own_links_resolved
from omnilab.agents.base import Agent, Budgets
from omnilab.agents.registry import get_agent, with_search_option
from omnilab.bench.backends import Backend, get_backend
from omnilab.bench.datasets import prepare_data
from omnilab.bench.datasets.remote_load import remote_inputs
from omnilab.bench.endpoint_guard import (
    DEAD_ENDPOINT_FAILURES,
    DeadEndpointGuard,
    EndpointDownError,
)
from omnilab.bench.errors import BenchError
from omnilab.bench.executor import TaskExecutor, TaskJob, task_seed
from omnilab.bench.gc_pause import run_collections
from omnilab.bench.header import RunHeader
from omnilab.bench.metrics import RunSummary, summarize
from omnilab.bench.plan import Rollout, RunPlan, plan_run
from omnilab.bench.plan_header import plan_header
from omnilab.bench.protocols import get_protocol, merge_options
from omnilab.bench.rescore import (
    default_scorer,
    judge_objects,
    make_scorer,
    resolve_judges,
)
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import (
    MissingMedia,
    ResultLog,
    RunConfig,
    RunDir,
    Selection,
    redact_url,
    sha256_file,
    write_atomic,
)
from omnilab.bench.scoring import Scorer
from omnilab.config import BucketSettings, get_settings
from omnilab.models import Model, get_model, lift_concurrency
from omnilab.tools.search_choice import check_search

__all__ = [
    "DEAD_ENDPOINT_FAILURES",
    "TRAJECTORY_LINGER_S",
    "Components",
    "EndpointDownError",
    "ExecutorRecipe",
    "Rollout",
    "RunOutcome",
    "RunPlan",
    "build_executor",
    "evaluate",
    "execute",
    "new_config",
    "plan_run",
]

_NUMPY_AFTER_S = 0.1
"""When the background import of numpy starts after the run does: by then the first tasks are
usually set up and waiting on the model, the event loop idle (in paired runs of 1,000 one-call
tasks over HTTP, wall -3 to -6 % against starting it with the run)."""

TRAJECTORY_LINGER_S = 0.25
"""How long a task's trajectory lines may wait in memory before they reach the OS: a killed
run loses at most this last stretch of the tasks it had in flight (which a resume reruns)."""

ResultSink = Callable[[TaskResult], None]
HeaderSink = Callable[[RunHeader], None]


def new_config(
    dataset: str,
    data: str | Path | None,
    *,
    agent: str,
    model: str,
    media_root: str | Path | None = None,
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
    samples: int = 1,
    cache: bool = True,
    protocol: str | None = None,
    preview: bool = False,
    search: str | None = None,
    missing_media: MissingMedia | None = None,
    allow_outside_media_root: bool = False,
) -> RunConfig:
    """A run config with paths made absolute, the dataset file hashed, the scorer defaulted to
    the dataset's and the judges resolved from the settings when none are given.

    ``preview``: the config is only for showing a prompt (nothing is scored), so a judged
    scorer without a judge is not an error.

    ``protocol`` names a reproduction preset (:mod:`omnilab.bench.protocols`): its agent
    options, budgets, scorer and scoring rules apply wherever the arguments leave them unset
    (``agent_options`` given here are merged over the preset's, key by key; the scoring rules
    only while the scorer is the preset's). ``search`` picks the web search provider for the
    run (``None``: the setting ``web.search_provider``). ``missing_media``: ``fail`` a task
    whose input files are missing, or ``drop`` those files and run it (``None``: the preset's
    choice, else ``fail``)."""
    preset = get_protocol(protocol) if protocol is not None else None
    rules = None
    if preset is not None:
        agent_options = merge_options(preset.agent_options, agent_options or {})
        budgets = budgets or preset.budgets
        scorer = scorer or preset.scorer
        # The preset's rules are its scorer's: another scorer chosen on top keeps its own.
        rules = preset.scoring_rules if scorer == preset.scorer else None
        missing_media = missing_media or preset.missing_media
    if search is not None:
        check_search(search)
        agent_options = with_search_option(agent, agent_options or {}, search)
    at = remote_inputs(data, media_root)
    data_path = at.data if at.data is not None else prepare_data(dataset, data)
    if not data_path.is_file():
        raise BenchError(f"dataset file {data} does not exist; check --data")
    chosen = scorer or default_scorer(dataset)
    return RunConfig(
        dataset=dataset,
        data=data_path,
        data_sha256=sha256_file(data_path),
        data_url=at.data_url,
        media_url=at.media_url,
        allow_outside_media_root=allow_outside_media_root,
        media_root=(  # resolved once, refusing another user's link on the way
            own_links_resolved(media_root, what="--media-root")
            if media_root is not None and at.media_url is None
            else None
        ),
        agent=agent,
        agent_options=dict(agent_options or {}),
        model=redact_url(model),
        roles={k: redact_url(v) for k, v in (roles or {}).items()},
        tools=list(tools) if tools is not None else None,
        budgets=budgets or Budgets(),
        task_timeout_s=task_timeout_s,
        scorer=chosen,
        judges=[redact_url(j) for j in (judges if preview else resolve_judges(chosen, judges))],
        seed=seed,
        selection=selection or Selection(),
        backend=backend,
        concurrency=concurrency,
        samples=samples,
        cache=cache,
        protocol=protocol,
        scoring_rules=rules,
        search=search,
        missing_media=missing_media or "fail",
    )


@dataclass
class Components:
    """Live objects that replace what a config names (tests, notebooks, custom agents)."""

    agent: Agent | None = None
    model: Model | None = None
    scorer: Scorer | None = None
    roles: dict[str, Model] = field(default_factory=dict)


def build_executor(
    config: RunConfig,
    components: Components | None = None,
    *,
    tasks_at_once: int | None = None,
    sync_trajectories: bool = True,
    trajectory_linger_s: float | None = None,
) -> TaskExecutor:
    """The executor of ``config``: agent, models and scorer built from their names, except
    those ``components`` provides. Bad names fail here, before any task starts.
    ``sync_trajectories`` false leaves syncing each trajectory to the caller (as
    :func:`execute` does, in the background); ``trajectory_linger_s`` buffers each
    trajectory's lines up to that long (see :class:`~omnilab.trajectory.TrajectoryWriter`).

    Models built from names cache their replies when ``config.cache`` (so a rerun of a task asks
    nothing twice), and their per-endpoint limits are lifted to ``tasks_at_once`` unless the
    user set one (:func:`~omnilab.models.concurrency.lift_concurrency`); live models passed in
    ``components`` keep theirs.
    """
    parts = components or Components()
    agent = parts.agent or get_agent(config.agent, **config.agent_options)
    built: dict[str, Model] = {}

    def named(role: str, name: str) -> Model:
        built[role] = get_model(name, cache=config.cache)
        return built[role]

    model = parts.model or named("agent", config.model)
    roles = {name: parts.roles.get(name) or named(name, m) for name, m in config.roles.items()}
    roles.update(parts.roles)
    if tasks_at_once is not None:
        lift_concurrency(built, tasks_at_once)
    scorer = parts.scorer or make_scorer(
        config.scorer, judge_objects(config.scorer, config.judges), config.scoring_rules
    )
    return TaskExecutor(
        agent=agent,
        model=model,
        roles=roles,
        scorer=scorer,
        tools=config.tools,
        budgets=config.budgets,
        timeout_s=config.task_timeout_s,
        search=config.search,
        missing_media=config.missing_media,
        sync_trajectories=sync_trajectories,
        trajectory_linger_s=trajectory_linger_s,
    )


@dataclass(frozen=True)
class ExecutorRecipe:
    """A picklable factory of a run's :class:`TaskExecutor`: the config, the live components
    (which must pickle themselves for a backend that ships the recipe to other processes) and
    the tasks at once, which the per-endpoint limits are lifted to. ``recipe()`` builds a fresh
    executor."""

    config: RunConfig
    components: Components | None = None
    tasks_at_once: int | None = None
    sync_trajectories: bool = True
    trajectory_linger_s: float | None = None
    buckets: dict[str, BucketSettings] | None = None
    """The driver's ``remote.buckets``: a worker process reads buckets with these (names of
    variables only, never a key; each node's environment holds the keys)."""
    made_in: int = field(default_factory=os.getpid)

    def __call__(self) -> TaskExecutor:
        if self.buckets is not None and os.getpid() != self.made_in:
            # Imported here: a text-only run's process loads nothing of omnilab.media
            # (tests/bench/test_eval_imports.py); only a worker given buckets needs it.
            from omnilab.media._remote_fs import use_buckets

            use_buckets(self.buckets)
        return build_executor(
            self.config,
            self.components,
            tasks_at_once=self.tasks_at_once,
            sync_trajectories=self.sync_trajectories,
            trajectory_linger_s=self.trajectory_linger_s,
        )


class RunOutcome(BaseModel):
    """What a run did and where it wrote."""

    run: Path
    selected: int
    """Selected tasks (times samples: rollouts)."""
    already_done: int
    ran: int
    """Rollouts run by this call (their results are appended)."""
    failed: int = 0
    """Rollouts run by this call that failed."""
    reached_model: int = 0
    """Rollouts run by this call whose agent made at least one model call."""
    header: RunHeader | None = None
    summary: RunSummary
    """Metrics over every result in the folder."""


def _jobs(plan: RunPlan, run: RunDir) -> Iterator[TaskJob]:
    for item in plan.todo:
        task, k = item.task, item.sample
        yield TaskJob(
            task=task,
            sample=k,
            seed=task_seed(plan.config.seed, task.id, k),
            trajectory=run.trajectory_file(task.id, k),
            workspace=run.workspace(task.id, k),
        )


async def execute(
    plan: RunPlan,
    *,
    concurrency: int | None = None,
    components: Components | None = None,
    backend: Backend | None = None,
    on_result: ResultSink | None = None,
    on_header: HeaderSink | None = None,
    dead_endpoint_failures: int = DEAD_ENDPOINT_FAILURES,
) -> RunOutcome:
    """Run ``plan.todo``, appending each result to ``results.jsonl`` as it finishes, then write
    ``metrics.json``. ``concurrency`` defaults to the config's, else ``bench.concurrency``; the
    per-endpoint limit of models built from names is lifted to it unless ``models.concurrency``
    was set explicitly (:func:`~omnilab.models.concurrency.lift_concurrency`). ``on_header`` sees the
    run header before the first task starts (it is also stored in ``run.json``); ``on_result``
    sees each new result (a progress bar).

    Raises :class:`EndpointDownError` when ``dead_endpoint_failures`` tasks in a row fail to
    connect to a model (their results are not written, so ``--resume`` runs them again).
    """
    run = RunDir(plan.run)
    tasks_at_once = concurrency or plan.config.concurrency or get_settings().bench.concurrency
    # Trajectories are synced by the results log, in the background, not by each task, and
    # their lines are written in batches: a task's file matters once its result is logged (a
    # killed run reruns the unfinished tasks), and a write per event was the loop's largest
    # single cost at 64 tasks in flight.
    recipe = ExecutorRecipe(
        plan.config,
        components,
        tasks_at_once,
        sync_trajectories=False,
        trajectory_linger_s=TRAJECTORY_LINGER_S,
        buckets=get_settings().remote.buckets,
    )
    # Build first: a bad model name or missing judge fails before the folder is touched.
    executor = recipe()
    chosen = backend or get_backend(plan.config.backend)
    header = plan_header(plan, executor, tasks_at_once)
    config = plan.config.model_copy(update={"header": header.model_dump(mode="json")})
    if on_header is not None:
        on_header(header)
    run.write_config(config)
    if plan.retried:
        drop = set(plan.retried)
        kept = [r for r in run.results() if r.task_id not in drop or r.error is None]
        write_atomic(run.results_file, "".join(r.model_dump_json() + "\n" for r in kept))
    ran = failed = reached = 0
    guard = DeadEndpointGuard(dead_endpoint_failures)
    # The local backend reuses the executor built above; others build their own from the recipe.
    factory = functools.partial(_same, executor) if chosen.name == "local" else recipe
    # Collections tuned for many small tasks (the loaded heap frozen), undone at the end.
    with run_collections():
        async with ResultLog(run.results_file) as log:

            def write(result: TaskResult) -> None:
                nonlocal ran, failed, reached
                log.append(result, sync_first=run.trajectory_file(result.task_id, result.sample))
                ran += 1
                failed += result.error is not None
                reached += result.model_calls > 0
                if on_result is not None:
                    on_result(result)

            # The summary's intervals need numpy (0.15-0.2 s to import): loaded while the
            # first tasks wait on the model rather than after the last one. With numpy.ma,
            # which np.quantile imports on first use (np.unique checks for masked arrays).
            # Started a moment after the run, not with it: the import holds the interpreter
            # lock, and started at once it slowed the setting up of the first tasks.
            numpy_later = asyncio.get_running_loop().call_later(
                _NUMPY_AFTER_S, import_in_background, "numpy.ma"
            )
            stream = chosen.run(_jobs(plan, run), factory, concurrency=tasks_at_once)
            try:
                async with contextlib.aclosing(stream) as results:
                    async for result in results:
                        for ready in guard.admit(result):
                            write(ready)
            finally:
                numpy_later.cancel()  # a short run: the summary imports it
            for ready in guard.flush():
                write(ready)
        # Still tuned: reading every result back and summarising them allocates as much again.
        all_results = run.results()
        summary = summarize(all_results)
    write_atomic(run.metrics_file, summary.model_dump_json(indent=2) + "\n")
    rollouts = len(plan.tasks) * plan.config.samples
    return RunOutcome(
        run=run.path,
        selected=rollouts,
        already_done=rollouts - len(plan.todo),
        ran=ran,
        failed=failed,
        reached_model=reached,
        header=header,
        summary=summary,
    )


def _same(executor: TaskExecutor) -> TaskExecutor:
    return executor


async def evaluate(
    config: RunConfig,
    run_dir: str | Path,
    *,
    resume: bool = False,
    retry_failed: bool = False,
    concurrency: int | None = None,
    components: Components | None = None,
    backend: Backend | None = None,
    on_result: ResultSink | None = None,
    on_header: HeaderSink | None = None,
) -> RunOutcome:
    """:func:`plan_run` then :func:`execute`: the Python entry point of ``omnilab eval``."""
    plan = plan_run(config, run_dir, resume=resume, retry_failed=retry_failed)
    return await execute(
        plan,
        concurrency=concurrency,
        components=components,
        backend=backend,
        on_result=on_result,
        on_header=on_header,
    )
