"""Planning a run: load the dataset, select the tasks, check the run folder, and list the
rollouts (task x sample) left to run. Nothing here runs an agent or writes a file."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from omnilab._private_paths import add_private_paths
from omnilab._version import __version__
from omnilab.bench.datasets import load_dataset
from omnilab.bench.empty_selection import empty_selection_error
from omnilab.bench.errors import BenchError
from omnilab.bench.remote_stage import record_versions
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import ConfigChange, RunConfig, RunDir
from omnilab.bench.task import Task

__all__ = ["Rollout", "RunPlan", "plan_run"]


class Rollout(BaseModel):
    """One sample of one task still to run."""

    task: Task
    sample: int = 0

    @property
    def id(self) -> str:
        """The task's id."""
        return self.task.id


class RunPlan(BaseModel):
    """What a run will do: the selected tasks, those already finished, and those left."""

    run: Path
    config: RunConfig
    tasks: list[Task]
    """The selected tasks, in dataset order."""
    done: list[TaskResult]
    """Results already in the folder (all of them, selected or not)."""
    todo: list[Rollout]
    """Selected tasks and samples without a result, in dataset order, samples in order."""
    retried: list[str] = []
    """Failed tasks whose results are dropped to run them again (``retry_failed``)."""
    changes: list[str] = []
    """What this resumed run changes in the stored config (endpoint, concurrency, timeouts)."""
    notes: list[str] = []


def plan_run(
    config: RunConfig, run_dir: str | Path, *, resume: bool = False, retry_failed: bool = False
) -> RunPlan:
    """Load the dataset, select the tasks, and check the folder against ``config``.

    Without ``resume`` the folder must not hold a run yet. With it, the stored config must agree
    with ``config`` on everything that decides a result (the :class:`BenchError` lists what
    differs); the selection, the number of samples, endpoint URLs, concurrency, timeouts and the
    cache may change (each change is recorded in ``run.json``). ``retry_failed`` runs failed
    tasks again.
    """
    run = RunDir(run_dir)
    notes: list[str] = []
    changes: list[str] = []
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
        changes = stored.operational_changes(config)
        history = list(stored.changes)
        if changes:
            history.append(ConfigChange(changes=changes))
            notes.append(f"config change recorded: {'; '.join(changes)}")
        config = config.model_copy(update={"created": stored.created, "changes": history})
        done = run.results()
    elif resume and run.path.exists() and any(run.path.iterdir()):
        raise BenchError(f"{run.path} is not a run folder (no run.json); cannot resume it")
    # The dataset (labels), its media and the run folder are the run's own: hidden from its
    # sandboxes wherever they lie (a dataset under /usr/local would be shown with /usr).
    add_private_paths(config.data, config.media_root, run.path)
    loaded = load_dataset(
        config.dataset,
        config.data,
        media_root=config.media_url or config.media_root,
        allow_outside_media_root=config.allow_outside_media_root,
    )
    notes.extend(f"warning: {w}" for w in loaded.warnings)
    tasks = config.selection.apply(loaded.tasks)
    if not tasks:
        raise empty_selection_error(loaded, config.selection)
    # Inputs at URLs: their versions as first recorded in the run folder (a resumed run
    # refuses a changed object); each task fetches its own where it runs.
    tasks = record_versions(run.path, tasks)
    # Only selected tasks: a dropped result outside the selection would never be run again.
    selected = {t.id for t in tasks}
    failed = [r for r in done if r.error is not None and r.task_id in selected]
    retried = list(dict.fromkeys(r.task_id for r in failed)) if retry_failed else []
    if retry_failed:
        drop = {r.key for r in failed}
        done = [r for r in done if r.key not in drop]
    finished = {r.key for r in done}
    todo = [
        Rollout(task=t, sample=k)
        for t in tasks
        for k in range(config.samples)
        if (t.id, k) not in finished
    ]
    if loaded.missing_media:
        missing = len({r.id for r in todo if r.id in loaded.missing_media})
        if missing:
            notes.append(f"{missing} tasks miss media files; they will fail (omnilab data check)")
    return RunPlan(
        run=run.path,
        config=config,
        tasks=tasks,
        done=done,
        todo=todo,
        retried=retried,
        changes=changes,
        notes=notes,
    )
