"""The ``ray`` backend: a run's tasks on a Ray cluster (extra ``ray``).

The driver (the ``omnilab eval`` process) connects to ``bench.ray_address`` / ``RAY_ADDRESS``, or
starts a local Ray when none is set. It starts ``workers`` actors (default: as many as the
cluster's CPUs allow at ``bench.ray_cpus_per_task`` each, at most the task concurrency); each
builds its own executor once from the run's picklable recipe and runs up to its share of the
concurrency as asyncio tasks, so at most ``concurrency`` tasks are in flight. Each job runs with
its trajectory and workspace in the worker's own temporary folder; the trajectory's text (and
the branch files of tree exploration) come back with the result and the driver alone writes
them, with the results, into the run folder (so
workers need no shared file system for the run folder). Inputs at URLs (``s3://``, ``https://``...)
are fetched by the worker that runs the task, into its node's media cache, with the driver's
``[remote.buckets]`` settings; local media paths must be readable on the workers (a shared file
system, or the same paths on every node). Files the agent left in its
workspace stay on the worker and are removed. A worker that dies has its task retried once on a
new worker (``bench.ray_task_retries``); after that the task fails with the error kept, and a
resumed run tries it again. Closing the run (Ctrl-C, an error) kills the actors.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import tempfile
from collections.abc import AsyncGenerator, Iterable
from pathlib import Path
from typing import Any

from omnilab.bench.backends import ExecutorFactory
from omnilab.bench.errors import BenchError
from omnilab.bench.executor import TaskExecutor, TaskJob
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import write_atomic
from omnilab.bench.task_files import finishing
from omnilab.models.cache import flush_pending

__all__ = ["RayBackend"]


class _Worker:
    """One actor: an executor built once, many tasks at once."""

    def __init__(self, make_executor: ExecutorFactory) -> None:
        self.executor: TaskExecutor = make_executor()

    async def run(self, job: TaskJob) -> tuple[TaskResult, str | None, dict[str, str]]:
        here = Path(tempfile.mkdtemp(prefix="omnilab-ray-"))
        # The run folder's layout in miniature, so what an agent keeps beside its trajectory
        # (tree exploration's branches/<task>/) comes back with it.
        local = job.model_copy(
            update={
                "trajectory": here / "trajectories" / job.trajectory.name,
                "workspace": here / "workspace",
            }
        )
        try:
            result = await self.executor.run(local)
            path = local.trajectory
            pending = finishing(path)
            if pending is not None:
                await asyncio.wrap_future(pending)  # its last lines, read below
            text = path.read_text(encoding="utf-8") if path.is_file() else None
            kept = sorted(p for p in (here / "branches").rglob("*") if p.is_file())
            extra = {p.relative_to(here).as_posix(): p.read_text(encoding="utf-8") for p in kept}
            # Actors are killed at the end of a run, which skips exit hooks: the task's replies
            # go to the cache file now.
            flush_pending()
            return result, text, extra
        finally:
            shutil.rmtree(here, ignore_errors=True)


class RayBackend:
    """See the module docstring."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        cpus_per_task: float | None = None,
        retries: int | None = None,
        num_cpus: int | None = None,
    ) -> None:
        from omnilab.config import get_settings

        bench = get_settings().bench
        self.address = address or bench.ray_address or os.environ.get("RAY_ADDRESS") or None
        self.workers = workers
        self.cpus_per_task = cpus_per_task if cpus_per_task is not None else bench.ray_cpus_per_task
        self.retries = retries if retries is not None else bench.ray_task_retries
        self.num_cpus = num_cpus

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError:
            raise BenchError("the ray backend needs Ray: pip install 'omnilab[ray]'") from None
        if not ray.is_initialized():
            if self.address is not None:
                ray.init(address=self.address, log_to_driver=False)
            else:
                # A cluster of this machine alone listens on loopback only: Ray's ports run
                # code for whoever reaches them.
                ray.init(
                    num_cpus=self.num_cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    _node_ip_address="127.0.0.1",
                )
        return ray

    async def run(
        self, jobs: Iterable[TaskJob], make_executor: ExecutorFactory, *, concurrency: int
    ) -> AsyncGenerator[TaskResult, None]:
        """See :class:`~omnilab.bench.backends.Backend`."""
        if concurrency < 1:
            raise BenchError(f"concurrency must be at least 1 (got {concurrency})")
        # On this thread, not a worker thread: Ray's node processes die with the thread that
        # started them (parent-death signal), and asyncio's worker threads end with the loop,
        # so a Ray started there was gone for the next run in the same process.
        ray = self._ray()
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        size = self.workers or max(1, min(concurrency, int(cpus // max(self.cpus_per_task, 0.01))))
        per_worker = math.ceil(concurrency / size)
        actor_class = ray.remote(_Worker).options(
            num_cpus=self.cpus_per_task, max_concurrency=per_worker, max_restarts=0
        )
        actors: list[Any] = []

        def spawn() -> Any:
            actor = actor_class.remote(make_executor)
            actors.append(actor)
            return actor

        pool = [spawn() for _ in range(size)]
        load = {id(a): 0 for a in pool}
        pending = iter(jobs)
        running: dict[asyncio.Future[Any], tuple[TaskJob, Any, int]] = {}

        def submit(job: TaskJob, tries: int) -> None:
            actor = min(pool, key=lambda a: load[id(a)])
            load[id(actor)] += 1
            future = asyncio.wrap_future(actor.run.remote(job).future())
            running[future] = (job, actor, tries)

        def refill() -> None:
            while len(running) < concurrency:
                job = next(pending, None)
                if job is None:
                    return
                submit(job, 0)

        try:
            refill()
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    job, actor, tries = running.pop(future)
                    load[id(actor)] -= 1
                    extra: dict[str, str] = {}
                    try:
                        result, text, extra = future.result()
                    except ray.exceptions.RayActorError as e:
                        if actor in pool:  # a dead worker: replace it
                            pool.remove(actor)
                            fresh = spawn()
                            pool.append(fresh)
                            load[id(fresh)] = 0
                        if tries < self.retries:
                            submit(job, tries + 1)
                            continue
                        result = TaskResult.for_task(
                            job.task,
                            sample=job.sample,
                            error=f"ray worker died {tries + 1} times: {type(e).__name__}",
                            error_kind="worker",
                        )
                        text = None
                    if text is not None:
                        # Unsynced: the runner's results log syncs it before the result line.
                        await asyncio.to_thread(write_atomic, job.trajectory, text, sync=False)
                    run_folder = job.trajectory.parent.parent
                    for rel, body in extra.items():
                        await asyncio.to_thread(write_atomic, run_folder / rel, body)
                    refill()
                    yield result
        finally:
            for future in running:
                future.cancel()
            for actor in actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)
