"""Lines printed under a run's summary that explain it: which tasks failed and why, grouped by
kind (a task an agent could not take is ``input``), and a hint when most answers had nothing a
scorer could read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from omnilab.bench.results import TaskResult

__all__ = ["failure_lines", "outcome_notes", "unread_answers_line"]

SHOWN = 3
"""Failed tasks named per kind; the rest are counted."""


def failure_lines(results: Sequence[TaskResult]) -> list[str]:
    """One line per failure kind: how many tasks, the first few ids and the first reason."""
    by_kind: dict[str, list[TaskResult]] = defaultdict(list)
    for r in results:
        if r.error is not None:
            by_kind[r.error_kind or "error"].append(r)
    lines = []
    for kind, failed in sorted(by_kind.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        ids = ", ".join(r.task_id for r in failed[:SHOWN])
        more = f" and {len(failed) - SHOWN} more" if len(failed) > SHOWN else ""
        task_word = "task" if len(failed) == 1 else "tasks"
        lines.append(f"failed ({kind}): {len(failed)} {task_word}, {ids}{more}: {failed[0].error}")
    return lines


def unread_answers_line(results: Sequence[TaskResult], run: str) -> str | None:
    """A hint when the scorer found nothing to read in most answers (no ``<answer>`` span):
    the model answers in sentences, and a lenient scorer may say more."""
    scored = [r for r in results if r.error is None and r.score is not None]
    unread = [
        r
        for r in scored
        if r.score
        and r.score.extracted is None
        and not r.score.correct
        and r.score.scorer != "answer_in_reply"
    ]
    if not scored or 2 * len(unread) <= len(scored):
        return None
    return (
        f"{len(unread)} of {len(scored)} answers have no <answer> span to score (the model "
        f"replied in plain text); to score the replies themselves: omnilab score {run} "
        "--scorer answer_in_reply"
    )


def outcome_notes(results: Sequence[TaskResult], run: str) -> list[str]:
    """Every note for a finished run, in print order."""
    hint = unread_answers_line(results, run)
    return [*failure_lines(results), *([hint] if hint else [])]
