"""Stopping a run whose model endpoint is dead: when several tasks in a row fail on a model
connection error, every task after them would fail alike, so the run stops instead of marking
them all failed; the results of those tasks are held back (not written), so ``--resume`` runs
them again once the endpoint is back."""

from __future__ import annotations

from omnilab.bench.executor import RunSetupError
from omnilab.bench.results import TaskResult

__all__ = ["DEAD_ENDPOINT_FAILURES", "DeadEndpointGuard", "EndpointDownError"]

DEAD_ENDPOINT_FAILURES = 3
"""Tasks in a row that fail on a model connection error before the run stops."""


class EndpointDownError(RunSetupError):
    """The model endpoint is dead or unreachable: every task would fail alike."""

    model_failure = True


class DeadEndpointGuard:
    """Holds back results that failed on a model connection error; past the limit in a row the
    run stops (their results unwritten, so a resume runs them again), and any other result
    releases the held ones (those tasks really failed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: list[TaskResult] = []

    def admit(self, result: TaskResult) -> list[TaskResult]:
        """The results to write now; raises :class:`EndpointDownError` past the limit."""
        if result.error_kind == "connection":
            self.held.append(result)
            if len(self.held) >= self.limit:
                raise EndpointDownError(
                    f"the model endpoint looks down: {len(self.held)} tasks in a row failed to "
                    f"connect (last: {result.task_id}: {_first_line(result.error)})"
                )
            return []
        released, self.held = [*self.held, result], []
        return released

    def flush(self) -> list[TaskResult]:
        """What is still held when the run ends normally."""
        released, self.held = self.held, []
        return released


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else "no detail"
