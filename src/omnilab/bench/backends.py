"""Execution backends: where the tasks of a run execute.

A backend gets the jobs (serialisable :class:`~omnilab.bench.executor.TaskJob` objects) and a
zero-argument factory that builds a :class:`~omnilab.bench.executor.TaskExecutor`, and yields
each :class:`~omnilab.bench.results.TaskResult` as soon as its task finishes. The runner
appends what it yields; scorers, dataset adapters and agents never see the backend.

``local`` runs every task in this process's event loop, at most ``concurrency`` at a time. A
cluster backend (Ray) fits the same protocol: ship the factory (for runs built from names it is
``functools.partial(build_executor, config)``, which pickles) to each worker once,
send jobs, and yield results as they come back; trajectories are written where the job's
``trajectory`` path points, so workers need the run folder on a shared file system, or the
backend copies each file back before yielding its result.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Iterable
from typing import Protocol, runtime_checkable

from omnilab.bench.errors import BenchError
from omnilab.bench.executor import TaskExecutor, TaskJob
from omnilab.bench.results import TaskResult
from omnilab.registry import Registry

__all__ = ["BACKENDS", "Backend", "ExecutorFactory", "LocalBackend", "get_backend"]

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


def _as_factory(value: object) -> Callable[[], Backend]:
    if not callable(value):
        raise TypeError(f"a backend factory must be callable, got {type(value).__name__}")
    return value


BACKENDS: Registry[Callable[[], Backend]] = Registry(
    "backend",
    group="omnilab.backends",
    entries={"local": LocalBackend},
    error=BenchError,
    coerce=_as_factory,
)
"""Backends by name; a plugin adds one with ``BACKENDS.register("ray", RayBackend)`` or an
``omnilab.backends`` entry point."""


def get_backend(name: str) -> Backend:
    """The backend registered as ``name``; :class:`BenchError` if there is none."""
    return BACKENDS.get(name)()
