"""Running one task: the agent under a timeout, its trajectory saved, the answer scored.

:class:`TaskExecutor` holds the live objects of a run (agent, models, scorer) and turns one
:class:`TaskJob` into one :class:`~omnilab.bench.results.TaskResult`. Whatever goes wrong with
the task (missing media, a timeout, an agent crash) becomes a result with ``error`` set, never
an exception; only errors that would fail every task alike (a bad key or model name) propagate,
as :class:`RunSetupError`.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from omnilab.agents.base import (
    Agent,
    AgentConfigError,
    AgentContext,
    AgentTask,
    Budgets,
    TaskInputError,
)
from omnilab.bench import task_files
from omnilab.bench.agent_task import agent_task
from omnilab.bench.errors import BenchError
from omnilab.bench.remote_stage import StageError, stage_present, stage_task
from omnilab.bench.rescore import score_result
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import MissingMedia
from omnilab.bench.scoring import Scorer, extract_answer
from omnilab.bench.task import Task, TaskFile
from omnilab.config import get_settings
from omnilab.errors import OmnilabError
from omnilab.models import (
    ErrorKind,
    Model,
    ModelConfigError,
    ModelError,
)
from omnilab.models.events import ModelCallEvent
from omnilab.tools.search_choice import use_search
from omnilab.trajectory import (
    ErrorEvent,
    RunEnd,
    Trajectory,
    TrajectoryError,
    TrajectoryWriter,
    read_trajectory,
)

__all__ = [
    "RunSetupError",
    "TaskExecutor",
    "TaskJob",
    "cost_usd",
    "is_setup_error",
    "prediction_text",
    "price_of",
    "task_seed",
    "to_agent_task",
]

_SETUP_KINDS = frozenset({ErrorKind.AUTH, ErrorKind.NOT_FOUND})


class RunSetupError(BenchError):
    """An error that would fail every remaining task alike (a bad key, an unknown model)."""


def is_setup_error(error: BaseException) -> bool:
    """Whether ``error`` is about the run's setup rather than one task."""
    if isinstance(error, TaskInputError):
        return False  # one task's inputs: that task fails, the others run
    if isinstance(error, ModelConfigError | AgentConfigError):
        return True
    return isinstance(error, ModelError) and error.kind in _SETUP_KINDS


def _stop(where: str, error: Exception) -> RunSetupError:
    stop = RunSetupError(f"{where}: {error}")
    # A refused key or a missing model is the model's side failing: the CLI says so by its exit
    # status; an unknown model name or agent option is the user's input.
    stop.model_failure = isinstance(error, OmnilabError) and error.model_failure
    return stop


def task_seed(seed: int, task_id: str, sample: int = 0) -> int:
    """The seed of one task (and sample): a hash of the run's seed, the task id and the sample
    index, so it does not depend on the order or the concurrency in which tasks run. Sample 0
    keeps the seed runs had before samples existed."""
    salt = f"{seed}:{task_id}" if sample == 0 else f"{seed}:{task_id}#{sample}"
    digest = hashlib.sha256(salt.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class TaskJob(BaseModel):
    """One unit of work, serialisable so that another process or machine can run it."""

    task: Task
    sample: int = 0
    """Which rollout of the task (``--samples K``)."""
    seed: int
    trajectory: Path
    workspace: Path


def price_of(model: str, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    """USD per million prompt and completion tokens for ``model``: an exact entry, else the
    first matching pattern (``openai:gpt-4o*``); ``None`` when unknown."""
    if model in prices:
        return prices[model]
    return next((p for pattern, p in prices.items() if fnmatch.fnmatchcase(model, pattern)), None)


def cost_usd(
    calls: Sequence[ModelCallEvent], prices: Mapping[str, tuple[float, float]]
) -> float | None:
    """What the model calls of a trajectory cost (cache hits are free); ``None`` when a model
    that was called has no price, even if it reported no tokens (a price of 0 must be said)."""
    total = 0.0
    for call in calls:
        if call.cached:
            continue
        price = price_of(call.model, prices)
        if price is None:
            return None
        total += (
            call.usage.prompt_tokens * price[0] + call.usage.completion_tokens * price[1]
        ) / 1e6
    return total


def _tool_counts(trajectory: Trajectory) -> dict[str, int]:
    counts: dict[str, int] = {}
    calls = trajectory.tool_calls
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
    # Calls a loop read from the reply's text itself (tir's rules=release) have a result but
    # no call on an assistant message: each such result is one call.
    for result in trajectory.tool_results:
        if result.result.metadata.get("read_from_text") is True:
            counts[result.name] = counts.get(result.name, 0) + 1
    return counts


def to_agent_task(task: Task) -> AgentTask:
    """What the agent is given of a benchmark task (the one place a :class:`Task` becomes an
    :class:`AgentTask`; the prompt preview uses it too)."""
    return agent_task(task)


def _missing_media(missing: Sequence[TaskFile]) -> str:
    shown = ", ".join(f"{f.id} ({f.given})" for f in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return f"missing media: {shown}{more}"


class TaskExecutor:
    """Runs tasks with one agent, its models and one scorer (see the module docstring)."""

    def __init__(
        self,
        *,
        agent: Agent,
        model: Model,
        scorer: Scorer,
        roles: Mapping[str, Model] | None = None,
        tools: list[str] | None = None,
        budgets: Budgets | None = None,
        timeout_s: float | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        search: str | None = None,
        missing_media: MissingMedia = "fail",
        sync_trajectories: bool = True,
        trajectory_linger_s: float | None = None,
    ) -> None:
        self.agent = agent
        self.model = model
        self.roles = dict(roles or {})
        self.scorer = scorer
        self.tools = tools
        self.budgets = budgets or Budgets()
        self.timeout_s = timeout_s
        self.prices = dict(get_settings().bench.prices if prices is None else prices)
        self.search = search
        """The web search provider of the run's web_search tools (``None``: the setting)."""
        self.missing_media = missing_media
        """``fail`` a task whose input files are missing, or ``drop`` them and run the rest."""
        self.sync_trajectories = sync_trajectories
        """Whether closing a task's trajectory syncs it to disk; the runner turns it off and
        syncs the files itself, in the background, before each result is made durable."""
        self.trajectory_linger_s = trajectory_linger_s
        """Hand a task's trajectory lines to the OS within this many seconds rather than one
        write per event (:class:`~omnilab.trajectory.TrajectoryWriter`); the runner sets it."""

    async def run(self, job: TaskJob) -> TaskResult:
        """The result of one task; raises only :class:`RunSetupError` (and cancellation)."""
        task = job.task
        started = time.perf_counter()
        absent: list[TaskFile] = []  # inputs at URLs whose object does not exist (drop only)
        if any(f.url is not None for f in task.files):
            # Inputs at URLs are fetched here, where the task runs, before the agent starts.
            try:
                if self.missing_media == "drop":
                    task, absent = await asyncio.to_thread(stage_present, task)
                else:
                    task = await asyncio.to_thread(stage_task, task)
            except StageError as e:
                return TaskResult.for_task(
                    task, sample=job.sample, error=str(e), error_kind="media"
                )
            job = job.model_copy(update={"task": task})
        missing = [*task.missing_files(), *absent]
        if missing and self.missing_media == "drop":
            # The reference (OmniGAIA's released code) runs such a task with what is there.
            kept = tuple(f for f in task.files if f not in missing)
            job = job.model_copy(update={"task": task.model_copy(update={"files": kept})})
        elif missing:
            return TaskResult.for_task(
                task, sample=job.sample, error=_missing_media(missing), error_kind="missing_media"
            )
        trajectory, error, kind = await self._run_agent(job)
        fields: dict[str, object] = {"wall_s": time.perf_counter() - started, "sample": job.sample}
        if trajectory is not None:
            # Usage and cost come from the trajectory, the one record of every call made.
            fields |= {
                "usage": trajectory.usage,
                "cost_usd": cost_usd(trajectory.model_calls, self.prices),
                "tool_calls": _tool_counts(trajectory),
                "model_calls": len(trajectory.model_calls),
                "stats": trajectory.run_end.stats if trajectory.run_end is not None else {},
            }
            if error is not None and kind != "timeout":
                kind = _model_error_kind(trajectory) or kind
        if missing:  # how many input files the run went without (--missing-media drop)
            stats = fields.get("stats")
            base = dict(stats) if isinstance(stats, dict) else {}
            fields["stats"] = {**base, "dropped_media": float(len(missing))}
        if error is not None or trajectory is None:
            return TaskResult.for_task(task, error=error, error_kind=kind, **fields)
        prediction = prediction_text(trajectory)
        result = TaskResult.for_task(
            task,
            prediction=prediction,
            extracted=trajectory.answer if trajectory.final else extract_answer(prediction),
            **fields,
        )
        try:
            return await score_result(self.scorer, task, result, trajectory=trajectory)
        except Exception as e:
            if is_setup_error(e):
                raise _stop(f"stopped while scoring {task.id}", e) from None
            return result.model_copy(
                update={
                    "error": f"scoring failed: {type(e).__name__}: {e}",
                    "error_kind": "scoring",
                }
            )

    async def _run_agent(self, job: TaskJob) -> tuple[Trajectory | None, str | None, str | None]:
        """The agent's trajectory (read back from disk when the agent failed), why the run
        failed, if it did, and the kind of that failure."""
        agent_task = to_agent_task(job.task)
        started = time.perf_counter()
        writer: TrajectoryWriter | None = None
        try:
            # The writer replaces an older file: a task rerun after a kill starts afresh. A
            # lingering writer makes its file later, off the event loop; otherwise the file is
            # made in a worker thread (a create can wait on the file system, and 64 tasks
            # share this event loop). The writer, which is Python work a thread could only do
            # holding the interpreter lock, is made here. The workspace is left to whatever
            # first puts something in it: most tasks never do.
            if self.trajectory_linger_s is not None:
                writer = TrajectoryWriter(job.trajectory, linger_s=self.trajectory_linger_s)
            else:
                opened = await asyncio.get_running_loop().run_in_executor(
                    task_files.file_threads(), task_files.create_trajectory_file, job.trajectory
                )
                writer = TrajectoryWriter(job.trajectory, opened=opened)
            ctx = AgentContext(
                # Per-task views: own usage totals, the sample's seed and cache key, no
                # crossing sinks.
                model=self.model.bound(seed=job.seed, sample=job.sample),
                roles={n: m.bound(seed=job.seed, sample=job.sample) for n, m in self.roles.items()},
                tools=self.tools,
                budgets=self.budgets,
                workspace=job.workspace,
                trajectory=writer,
                on_event=None,
            )
            try:
                async with asyncio.timeout(self.timeout_s):
                    with use_search(self.search):
                        trajectory = await self.agent.run(agent_task, ctx)
            except TimeoutError:
                error = f"timeout: no answer within {self.timeout_s:g} s"
                return _close_failed(writer, "timeout", error, started), error, "timeout"
            except TaskInputError as e:
                # this task's inputs do not suit the agent: its failure, not the run's
                error = f"unsuitable input: {e}"
                return _close_failed(writer, "input", error, started), error, "input"
            except Exception as e:
                if is_setup_error(e):
                    raise _stop(f"stopped at task {job.task.id}", e) from None
                error = f"agent crashed: {type(e).__name__}: {e}"
                kind = str(e.kind) if isinstance(e, ModelError) else "crash"
                return _close_failed(writer, "internal", error, started), error, kind
        finally:
            # Closed without a sync: the runner syncs each trajectory in the background before
            # the result line that points to it (ResultLog), so no task waits on the disk. A
            # lingering writer's last lines are written, and a workspace left empty is
            # removed, in a file thread that the task does not wait for (whoever needs the
            # file waits for task_files.finishing); else the task waits (shielded: also when
            # cancelled).
            if writer is not None and writer.linger_s is not None:
                task_files.finish_later(writer, job.workspace, self.sync_trajectories)
            else:
                if writer is not None:
                    writer.close(sync=self.sync_trajectories)
                done = asyncio.get_running_loop().run_in_executor(
                    task_files.file_threads(),
                    task_files.finish,
                    None,
                    job.workspace,
                    self.sync_trajectories,
                )
                await asyncio.shield(done)
        failure = _status_error(trajectory)
        return trajectory, failure, ("agent" if failure is not None else None)


def _close_failed(
    writer: TrajectoryWriter, kind: str, message: str, started: float
) -> Trajectory | None:
    """End the trajectory of a run the agent could not end itself (timeout, crash) and return
    what it holds; ``None`` when the file cannot be read back."""
    try:
        so_far = read_trajectory(writer.path)
    except TrajectoryError:
        return None
    if so_far.run_end is not None:
        return so_far  # the agent ended it on its way out (cancellation)
    end = RunEnd(
        status="error",
        usage=so_far.usage,
        wall_s=time.perf_counter() - started,
        turns=len(so_far.model_calls),
    )
    for event in (ErrorEvent(error_kind=kind, message=message), end):
        writer.emit(event)
        so_far.events.append(event)
    return so_far


def _model_error_kind(trajectory: Trajectory) -> str | None:
    """The error kind of the last failed model call of a failed run (``connection``, ...)."""
    failed = [c for c in trajectory.model_calls if c.error is not None]
    return failed[-1].error_kind if failed and failed[-1].error_kind else None


def prediction_text(trajectory: Trajectory) -> str:
    """The text the scorer reads: the final answer message whole (its ``<answer>`` span and the
    words around it), else, for a run that ended without an answer, its last assistant text
    that holds an ``<answer>`` wrapper (an answer given before the step limit stopped the run),
    else its last assistant text."""
    final = trajectory.final
    if final is not None:
        return final.text
    texts = [m.text for m in trajectory.messages() if m.role == "assistant" and m.text.strip()]
    wrapped = [t for t in texts if extract_answer(t) is not None]
    return (wrapped or texts or [""])[-1]


def _status_error(trajectory: Trajectory) -> str | None:
    """Why the run failed, for a run the agent ended with an error (or never ended)."""
    status = trajectory.status
    if status == "error":
        last = next((e for e in reversed(trajectory.events) if isinstance(e, ErrorEvent)), None)
        detail = f"{last.error_kind}: {last.message}" if last is not None else "no detail"
        return f"agent error: {detail}"
    if status == "incomplete":
        return "agent returned without ending its trajectory"
    return None
