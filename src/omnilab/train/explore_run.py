"""Tree exploration over a dataset, through the evaluation runner (one runner, one run folder).

An exploration run is an ordinary run folder (``run.json``, ``results.jsonl``, one trajectory
per task: the successful path, scored by the run's scorer) plus ``branches/<task>/`` with every
branch and the search journal. Its config names the wrapped scaffold as ``agent``, the verifier
as role ``verifier`` and the search settings under the agent option ``explore``, so a resumed run
must use the same ones (the runner's own check) and skips finished tasks, while an unfinished
task continues from its journal (:mod:`omnilab.train.explore`). ``omnilab export sft`` reads the
folder like any other (``--correct-only`` keeps the successful paths).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omnilab.agents.base import Budgets
from omnilab.agents.registry import get_agent
from omnilab.bench.errors import BenchError
from omnilab.bench.executor import prediction_text
from omnilab.bench.rescore import judge_objects, make_scorer, score_result
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunConfig, Selection
from omnilab.bench.runner import Components, ResultSink, RunOutcome, execute, new_config, plan_run
from omnilab.bench.scoring import Scorer, extract_answer
from omnilab.bench.task import Task
from omnilab.train.explore import VERIFIER_ROLE, Accept, ExploreOptions, ExploringAgent
from omnilab.trajectory import Trajectory

__all__ = [
    "EXPLORE_OPTION",
    "ScorerCheck",
    "explore",
    "explore_config",
    "exploring_agent",
    "scorer_check",
]

EXPLORE_OPTION = "explore"
"""The agent option of a run's config that holds the search settings."""


def explore_config(
    dataset: str,
    data: str | Path,
    *,
    agent: str,
    model: str,
    verifier: str,
    options: ExploreOptions,
    agent_options: Mapping[str, Any] | None = None,
    roles: Mapping[str, str] | None = None,
    media_root: str | Path | None = None,
    tools: Sequence[str] | None = None,
    budgets: Budgets | None = None,
    scorer: str | None = None,
    judges: Sequence[str] = (),
    selection: Selection | None = None,
    concurrency: int | None = None,
    seed: int = 0,
    backend: str = "local",
    allow_outside_media_root: bool = False,
) -> RunConfig:
    """The run config of an exploration of ``dataset`` with scaffold ``agent`` (``roles``: the
    scaffold's further models, e.g. ``perception``; ``backend``: where tasks run, as for
    ``omnilab eval``). ``data`` and ``media_root`` may be URLs, as for ``omnilab eval``."""
    if EXPLORE_OPTION in (agent_options or {}):
        raise BenchError(f"agent option {EXPLORE_OPTION!r} is taken by tree exploration")
    if VERIFIER_ROLE in (roles or {}):
        raise BenchError("give the verifier with --verifier, not as a role")
    return new_config(
        dataset,
        data,
        agent=agent,
        model=model,
        media_root=media_root,
        allow_outside_media_root=allow_outside_media_root,
        agent_options={**(agent_options or {}), EXPLORE_OPTION: options.model_dump()},
        roles={**(roles or {}), VERIFIER_ROLE: verifier},
        tools=tools,
        budgets=budgets,
        scorer=scorer,
        judges=judges,
        seed=seed,
        selection=selection,
        concurrency=concurrency,
        backend=backend,
    )


class ScorerCheck:
    """``accept`` of :class:`ExploringAgent`: a finished branch passes when the scorer judges
    its answer correct, exactly as the run will score the task. A class, not a closure, so the
    exploring agent pickles for the ``processes`` and ``ray`` backends."""

    def __init__(self, scorer: Scorer, tasks: Sequence[Task]) -> None:
        self.scorer = scorer
        self.by_id = {t.id: t for t in tasks}

    async def __call__(self, task_id: str, trajectory: Trajectory) -> bool:
        task = self.by_id[task_id]
        prediction = prediction_text(trajectory)
        extracted = trajectory.answer if trajectory.final else extract_answer(prediction)
        result = TaskResult.for_task(task, prediction=prediction, extracted=extracted)
        scored = await score_result(self.scorer, task, result, trajectory=trajectory)
        return scored.judged is True


def scorer_check(scorer: Scorer, tasks: Sequence[Task]) -> Accept:
    """The :class:`ScorerCheck` of ``scorer`` over ``tasks``."""
    return ScorerCheck(scorer, tasks)


def exploring_agent(
    config: RunConfig,
    tasks: Sequence[Task],
    *,
    inner: Any | None = None,
    scorer: Scorer | None = None,
) -> ExploringAgent:
    """The search agent of ``config`` over ``tasks`` (their labels and aliases are the
    verifier's hindsight; final answers must also pass the run's scorer, or ``scorer``);
    ``inner`` replaces the scaffold the config names (tests)."""
    options = dict(config.agent_options)
    settings = options.pop(EXPLORE_OPTION, None)
    if settings is None:
        raise BenchError(
            f"the run folder holds no tree exploration (its config has no agent option "
            f"{EXPLORE_OPTION!r}); explore into a new --out"
        )
    scaffold = inner if inner is not None else get_agent(config.agent, **options)
    answers = {t.id: list(t.answers.all) for t in tasks}
    chosen = scorer or make_scorer(
        config.scorer, judge_objects(config.scorer, config.judges), config.scoring_rules
    )
    return ExploringAgent(
        scaffold,
        answers,
        ExploreOptions.model_validate(settings),
        accept=scorer_check(chosen, tasks),
    )


async def explore(
    config: RunConfig,
    run_dir: str | Path,
    *,
    resume: bool = False,
    components: Components | None = None,
    on_result: ResultSink | None = None,
) -> RunOutcome:
    """Explore every selected task of ``config`` into ``run_dir`` (see the module docstring).

    ``components`` replaces what the config names, as for ``evaluate``; its ``agent`` is the
    scaffold to wrap."""
    plan = plan_run(config, run_dir, resume=resume)
    parts = components or Components()
    wrapped = exploring_agent(config, plan.tasks, inner=parts.agent, scorer=parts.scorer)
    live = Components(agent=wrapped, model=parts.model, scorer=parts.scorer, roles=parts.roles)
    return await execute(plan, components=live, on_result=on_result)
