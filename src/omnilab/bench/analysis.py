"""Error analysis of failed tasks with the OmniGAIA B.6 prompt, run by the ``analyst`` model.

Each failed task (judged wrong, or its run failed) is shown to the analyst with its question,
inputs, annotated solution, answer and the agent's trace; the analyst returns a JSON object
with one or more of six categories. Replies are parsed strictly (a JSON object, known category
names only), asked again once with what was wrong, and recorded as a failure after that.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, Field

from omnilab.bench.results import TaskResult
from omnilab.bench.task import Task
from omnilab.bench.templates import render
from omnilab.models import ErrorKind, GenerateConfig, Message, Model, ModelConfigError, ModelError

__all__ = [
    "ERROR_CATEGORIES",
    "AnalysisParseError",
    "ErrorAnalysis",
    "LabelHook",
    "TaskErrorLabels",
    "analyze_errors",
    "default_trace",
    "parse_analysis",
]

ERROR_CATEGORIES = (
    "Visual Perception Error",
    "Audio Perception Error",
    "Ineffective Tool Call",
    "Reasoning Error",
    "Instruction Following Error",
    "No Answer",
)
"""The six categories of OmniGAIA's error taxonomy (Appendix B.6), as the prompt names them."""

_BY_LOWER = {c.lower(): c for c in ERROR_CATEGORIES}
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_SETUP_ERRORS = frozenset({ErrorKind.AUTH, ErrorKind.NOT_FOUND})

TraceFn = Callable[[TaskResult], str]
LabelHook = Callable[["TaskErrorLabels", int, int], None]
"""Called with each task's labels as they come, how many are done and how many there are."""


class AnalysisParseError(ValueError):
    """An analyst reply that is not the JSON object the prompt asks for."""


class TaskErrorLabels(BaseModel):
    """The analyst's labels for one failed task."""

    task_id: str
    sample: int = 0
    """Which rollout of the task (``--samples K``): each failed sample is labelled on its own."""
    level: str | None = None
    categories: list[str] = Field(default_factory=list)
    explanation: str | None = None
    replies: list[str] = Field(default_factory=list)
    """Raw analyst replies, in order."""
    error: str | None = None
    """Why no labels were obtained (unparseable replies, model failure)."""


class ErrorAnalysis(BaseModel):
    """Per-task labels and category frequencies (multi-label: shares need not sum to 1)."""

    labels: list[TaskErrorLabels]
    analysed: int
    """Failed tasks labelled successfully."""
    failures: int
    """Failed tasks whose analysis itself failed."""
    frequencies: dict[str, int]
    """Tasks per category, over the labelled tasks; every category is listed."""
    by_level: dict[str, dict[str, int]]
    """The same counts per Level (``(none)`` for tasks without one)."""
    skipped: dict[str, int] = Field(default_factory=dict)
    """Results not analysed, by reason (``correct``, ``undecided``, ``task not found``)."""
    notices: list[str] = Field(default_factory=list)
    """One line per run file that was refused (a trajectory that is a link, say)."""


def parse_analysis(reply: str) -> tuple[list[str], str]:
    """``(categories, explanation)`` from a reply; :class:`AnalysisParseError` says what is wrong.

    The last fenced block is read if there is one, else the whole reply. Category names must be
    the prompt's (compared ignoring case and surrounding spaces); at least one is required.
    """
    blocks = _FENCE.findall(reply)
    text = (blocks[-1] if blocks else reply).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise AnalysisParseError(f"the reply is not valid JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise AnalysisParseError("the reply is JSON but not an object")
    categories = data.get("categories")
    if not isinstance(categories, list) or not categories:
        raise AnalysisParseError('"categories" must be a non-empty list of category names')
    names: list[str] = []
    for item in categories:
        canonical = _BY_LOWER.get(item.strip().lower()) if isinstance(item, str) else None
        if canonical is None:
            raise AnalysisParseError(f"unknown category {item!r}")
        if canonical not in names:
            names.append(canonical)
    explanation = data.get("explanation")
    if not isinstance(explanation, str):
        raise AnalysisParseError('"explanation" must be a string')
    return names, explanation


def default_trace(result: TaskResult) -> str:
    """A trace from the result alone: tool calls by name, the run error, the final output.

    The full step-by-step trace comes from the trajectory log; pass ``trace=`` to use it.
    """
    calls = ", ".join(f"{name} x{n}" for name, n in result.tool_calls.items()) or "none"
    lines = [f"Tool calls: {calls}"]
    if result.error:
        lines.append(f"Run error: {result.error}")
    lines.append("Final output:")
    lines.append(result.prediction or "(empty)")
    return "\n".join(lines)


def _inputs(task: Task) -> str:
    original = task.original.get("omni_modal_input")
    if original is not None:
        return json.dumps(original, ensure_ascii=False)
    listed = [{"type": f.kind, "id": f.id, "path": f.given} for f in task.files]
    return json.dumps(listed, ensure_ascii=False)


def _solution(task: Task) -> str:
    solution = task.metadata.solution
    if solution is None:
        return "(not available)"
    return solution if isinstance(solution, str) else "\n".join(solution)


async def _label(
    result: TaskResult, task: Task, model: Model, trace: TraceFn, config: GenerateConfig
) -> TaskErrorLabels:
    prompt = render(
        "omnigaia_error_analysis",
        question=task.question,
        omni_modal_input=_inputs(task),
        annotated_solution=_solution(task),
        answer=task.answers.label,
        trace_str=trace(result),
    )
    labels = TaskErrorLabels(
        task_id=result.task_id, sample=result.sample, level=result.metadata.level
    )
    messages = [Message.user(prompt)]
    for attempt in range(2):
        try:
            output = await model.generate(messages, config=config)
        except ModelConfigError:
            raise
        except ModelError as e:
            if e.kind in _SETUP_ERRORS:
                raise
            labels.error = f"analyst call failed: {e}"
            return labels
        labels.replies.append(output.text)
        try:
            labels.categories, labels.explanation = parse_analysis(output.text)
        except AnalysisParseError as e:
            labels.error = f"unusable analysis: {e}"
            if attempt == 0:
                retry = render("analysis_retry", problem=str(e))
                messages = [*messages, Message.assistant(output.text), Message.user(retry)]
            continue
        labels.error = None
        return labels
    return labels


async def analyze_errors(
    results: Sequence[TaskResult],
    tasks: Mapping[str, Task] | Sequence[Task],
    model: Model,
    *,
    trace: TraceFn | None = None,
    concurrency: int = 4,
    config: GenerateConfig | None = None,
    known: Mapping[tuple[str, int], TaskErrorLabels] | None = None,
    on_label: LabelHook | None = None,
) -> ErrorAnalysis:
    """Label every failed result with the B.6 categories and count them, overall and by Level.

    ``tasks`` gives each result's task (by id); ``trace`` renders a result's execution trace
    (default: :func:`default_trace`). Correct and undecided results are skipped and counted.
    ``known`` holds labels obtained before (an interrupted analysis, by ``(task_id, sample)``):
    those without an error are reused, not asked again. ``on_label`` sees each task's labels as
    they come (reused ones first).
    """
    by_id = tasks if isinstance(tasks, Mapping) else {t.id: t for t in tasks}
    skipped: Counter[str] = Counter()
    todo: list[tuple[TaskResult, Task]] = []
    for result in results:
        verdict = result.judged
        if verdict is None:
            skipped["undecided"] += 1
        elif verdict:
            skipped["correct"] += 1
        elif result.task_id not in by_id:
            skipped["task not found"] += 1
        else:
            todo.append((result, by_id[result.task_id]))
    limit = asyncio.Semaphore(max(1, concurrency))
    cfg = config or GenerateConfig(temperature=0.0)
    render_trace = trace or default_trace

    reuse = {k: v for k, v in (known or {}).items() if v.error is None}
    finished = 0

    def told(label: TaskErrorLabels) -> TaskErrorLabels:
        nonlocal finished
        finished += 1
        if on_label is not None:
            on_label(label, finished, len(todo))
        return label

    async def one(result: TaskResult, task: Task) -> TaskErrorLabels:
        before = reuse.get(result.key)
        if before is not None:
            return told(before)
        async with limit:
            return told(await _label(result, task, model, render_trace, cfg))

    labels = list(await asyncio.gather(*(one(r, t) for r, t in todo)))
    done = [lab for lab in labels if lab.error is None]
    frequencies = dict.fromkeys(ERROR_CATEGORIES, 0)
    by_level: dict[str, dict[str, int]] = {}
    for lab in done:
        level = by_level.setdefault(lab.level or "(none)", dict.fromkeys(ERROR_CATEGORIES, 0))
        for category in lab.categories:
            frequencies[category] += 1
            level[category] += 1
    return ErrorAnalysis(
        labels=labels,
        analysed=len(done),
        failures=len(labels) - len(done),
        frequencies=frequencies,
        by_level=by_level,
        skipped=dict(skipped),
    )
