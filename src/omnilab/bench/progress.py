"""Running totals of a run (accuracy, failures, tokens, cost) and a rich progress bar over them.

:class:`RunTally` is plain counting, usable anywhere; :class:`RichProgress` shows it live on a
console. Both take finished :class:`~omnilab.bench.results.TaskResult` objects one at a time and
keep no list of them, so memory does not grow with the number of tasks.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from omnilab.bench.results import TaskResult

__all__ = ["RichProgress", "RunTally", "format_tokens"]


def format_tokens(count: int) -> str:
    """``950``, ``12.3k``, ``4.56M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


class RunTally:
    """Counts over finished tasks: verdicts, failed runs, tokens and known cost."""

    def __init__(self, results: Iterable[TaskResult] = ()) -> None:
        self.tasks = 0
        self.correct = 0
        self.decided = 0
        """Tasks with a verdict (a judge error leaves a task undecided)."""
        self.failed = 0
        """Tasks whose run failed (timeout, crash, missing media); they count as wrong."""
        self.tokens = 0
        self.cost_usd = 0.0
        self.priced = 0
        """Tasks whose cost is known."""
        for result in results:
            self.add(result)

    def add(self, result: TaskResult) -> None:
        """Count one finished task."""
        self.tasks += 1
        verdict = result.judged
        if verdict is not None:
            self.decided += 1
            self.correct += int(verdict)
        if result.error is not None:
            self.failed += 1
        self.tokens += result.usage.total_tokens
        if result.cost_usd is not None:
            self.cost_usd += result.cost_usd
            self.priced += 1

    @property
    def accuracy(self) -> float | None:
        """Correct over decided tasks so far; ``None`` before the first verdict."""
        return self.correct / self.decided if self.decided else None

    def summary(self) -> str:
        """One line: ``acc 62.5% (5/8) | 1 failed | 12.3k tokens | $0.0400``."""
        acc = "acc -" if self.accuracy is None else f"acc {self.accuracy:.1%}"
        parts = [f"{acc} ({self.correct}/{self.decided})"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        undecided = self.tasks - self.decided
        if undecided:
            parts.append(f"{undecided} undecided")
        parts.append(f"{format_tokens(self.tokens)} tokens")
        if self.priced:
            parts.append(f"${self.cost_usd:.4f}")
        return " | ".join(parts)


class RichProgress:
    """A live progress bar with running accuracy, failures, tokens and cost.

    ``with RichProgress(total, done=previous_results) as bar: bar.add(result)``. Results already
    in the run folder (a resumed run) start the bar and the totals.
    """

    def __init__(
        self,
        total: int,
        *,
        done: Iterable[TaskResult] = (),
        console: Console | None = None,
        description: str = "eval",
    ) -> None:
        self.tally = RunTally(done)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._task: TaskID = self._progress.add_task(
            description, total=total, completed=self.tally.tasks, stats=self.tally.summary()
        )

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def add(self, result: TaskResult) -> None:
        """Advance by one finished task."""
        self.tally.add(result)
        self._progress.update(self._task, advance=1, stats=self.tally.summary())
