"""Execution backends: where the tasks of a run execute.

A backend gets the jobs (serialisable :class:`~omnilab.bench.executor.TaskJob` objects) and a
zero-argument factory that builds a :class:`~omnilab.bench.executor.TaskExecutor`, and yields
each :class:`~omnilab.bench.results.TaskResult` as soon as its task finishes. The runner
appends what it yields; scorers, dataset adapters and agents never see the backend.

``local`` runs every task in this process's event loop, at most ``concurrency`` at a time.
``processes`` runs tasks in worker processes (``spawn``ed, so nothing of this process's state
leaks in): the factory (the runner's :class:`~omnilab.bench.runner.ExecutorRecipe`, which
pickles) goes to each worker once, each worker builds its own executor and runs one task at a
time, and results come back as they finish. It suits tasks whose own work (media decoding,
perception, tools) needs more than one core; model-bound runs go as fast with ``local``. A
cluster backend (Ray) fits the same protocol; trajectories are written where the job's
``trajectory`` path points, so workers need the run folder on a shared file system, or the
backend copies each file back before yielding its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import signal
from collections.abc import AsyncGenerator, Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Protocol, runtime_checkable

from omnilab._private_paths import add_private_paths, private_paths
from omnilab.bench.errors import BenchError
from omnilab.bench.executor import TaskExecutor, TaskJob
from omnilab.bench.results import TaskResult
from omnilab.bench.task_files import finishing
from omnilab.models.cache import flush_pending
from omnilab.registry import Registry

__all__ = [
    "BACKENDS",
    "Backend",
    "ExecutorFactory",
    "LocalBackend",
    "ProcessBackend",
    "get_backend",
]

ExecutorFactory = Callable[[], TaskExecutor]


@runtime_checkable
class Backend(Protocol):
    """Runs jobs and yields their results in the order they finish."""

    name: str

    def run(
        self, jobs: Iterable[TaskJob], make_executor: ExecutorFactory, *, concurrency: int
    ) -> AsyncGenerator[TaskResult, None]:
        """Results of ``jobs``; closing the iterator early cancels the jobs still running."""
        ...


class LocalBackend:
    """Tasks as asyncio tasks in this process: ``concurrency`` workers take jobs in order.

    A task holds its worker slot from start to end (media work and tool calls included, not
    only model calls). Jobs are pulled from the iterable as workers free up, and each result is
    handed over as soon as it exists, so memory does not grow with the number of tasks. The
    first exception a worker raises (only :class:`~omnilab.bench.executor.RunSetupError` is
    expected) stops the other workers and is raised to the caller.
    """

    name = "local"

    async def run(
        self, jobs: Iterable[TaskJob], make_executor: ExecutorFactory, *, concurrency: int
    ) -> AsyncGenerator[TaskResult, None]:
        """See :class:`Backend`."""
        if concurrency < 1:
            raise BenchError(f"concurrency must be at least 1 (got {concurrency})")
        executor = make_executor()
        pending = iter(jobs)
        # Bounded, so finished results wait for the runner instead of piling up.
        results: asyncio.Queue[TaskResult | BaseException | None] = asyncio.Queue(concurrency)

        async def worker() -> None:
            try:
                for job in pending:  # one shared iterator: each job goes to exactly one worker
                    await results.put(await executor.run(job))
            except asyncio.CancelledError:
                raise
            except BaseException as e:  # handed to the consumer, which stops the others
                await results.put(e)
                return
            # Not in a finally: a cancelled worker must not wait on a queue nobody reads.
            await results.put(None)

        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
        running = len(workers)
        try:
            while running:
                item = await results.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:
            for w in workers:
                w.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*workers, return_exceptions=True)


# State of one worker process of ProcessBackend: its executor and its event loop, both made
# once, so model clients, caches and endpoint limits live as long as the worker.
_WORKER: dict[str, object] = {}


def _init_worker(make_executor: ExecutorFactory, private: list[str]) -> None:
    # Ctrl-C reaches the whole process group: the parent stops the run and ends the workers,
    # which would otherwise each print a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    add_private_paths(*private)  # the run's folders, masked in this worker's sandboxes too
    _WORKER["executor"] = make_executor()
    _WORKER["loop"] = asyncio.new_event_loop()


def _run_in_worker(job: TaskJob) -> TaskResult:
    executor = _WORKER["executor"]
    loop = _WORKER["loop"]
    assert isinstance(executor, TaskExecutor) and isinstance(loop, asyncio.AbstractEventLoop)
    result = loop.run_until_complete(executor.run(job))
    pending = finishing(job.trajectory)
    if pending is not None:
        pending.result()  # the trajectory complete before the parent logs the result
    # The pool ends its workers by terminating them, which skips exit hooks: the task's
    # replies go to the cache file now.
    flush_pending()
    return result


class ProcessBackend:
    """Tasks in worker processes: ``min(concurrency, workers)`` processes, one task each at a
    time, jobs handed out in order as workers free up (see the module docstring).

    The factory must pickle (:class:`BenchError` otherwise: live objects such as a model built
    in a notebook may not). Closing the iterator early, or an exception (a
    :class:`~omnilab.bench.executor.RunSetupError` raised in a worker comes back as itself),
    terminates the workers.
    """

    name = "processes"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1

    async def run(
        self, jobs: Iterable[TaskJob], make_executor: ExecutorFactory, *, concurrency: int
    ) -> AsyncGenerator[TaskResult, None]:
        """See :class:`Backend`."""
        if concurrency < 1:
            raise BenchError(f"concurrency must be at least 1 (got {concurrency})")
        try:
            pickle.dumps(make_executor)
        except Exception as e:
            raise BenchError(
                f"the processes backend cannot send this run to worker processes ({e}); "
                "use --backend local"
            ) from None
        size = min(concurrency, self.workers)
        pool = ProcessPoolExecutor(
            max_workers=size,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(make_executor, private_paths()),
        )
        loop = asyncio.get_running_loop()
        pending = iter(jobs)
        running: set[asyncio.Future[TaskResult]] = set()

        def submit() -> None:
            job = next(pending, None)
            if job is not None:
                running.add(asyncio.wrap_future(pool.submit(_run_in_worker, job), loop=loop))

        try:
            for _ in range(size):
                submit()
            while running:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    running.discard(future)
                    submit()  # keep every worker busy while the result is handed over
                    yield future.result()
        finally:
            for future in running:
                future.cancel()
            # Running tasks cannot be cancelled inside a worker: end the workers themselves.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=True, cancel_futures=True)


def _as_factory(value: object) -> Callable[[], Backend]:
    if not callable(value):
        raise TypeError(f"a backend factory must be callable, got {type(value).__name__}")
    return value


BACKENDS: Registry[Callable[[], Backend]] = Registry(
    "backend",
    group="omnilab.backends",
    entries={
        "local": LocalBackend,
        "processes": ProcessBackend,
        "ray": "omnilab.bench.backends_ray:RayBackend",
    },
    error=BenchError,
    coerce=_as_factory,
)
"""Backends by name; a plugin adds one with ``BACKENDS.register("ray", RayBackend)`` or an
``omnilab.backends`` entry point."""


def get_backend(name: str) -> Backend:
    """The backend registered as ``name``; :class:`BenchError` if there is none."""
    return BACKENDS.get(name)()
