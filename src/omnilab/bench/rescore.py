"""Scorers by name, and re-scoring a finished run with another scorer or judge.

A run stores the scorer's name and the judges' model names, never scorer objects, so the same
choice can be rebuilt in another process (a resumed run, a Ray worker, ``omnilab score``).
Re-scoring reads the predictions from ``results.jsonl`` and writes ``scores/<name>.jsonl``
beside it; the original results are never touched.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from omnilab.bench.datasets import load_dataset
from omnilab.bench.errors import BenchError
from omnilab.bench.metrics import RunSummary, summarize
from omnilab.bench.results import TaskResult
from omnilab.bench.roles import judge_models, role_model
from omnilab.bench.run_dir import ResultLog, RunDir, write_atomic
from omnilab.bench.scoring import Scorer
from omnilab.bench.scoring.judging import ScoringRules
from omnilab.bench.scoring.registry import SCORERS
from omnilab.bench.task import Task
from omnilab.config import get_settings
from omnilab.models import Model
from omnilab.trajectory import Trajectory, read_trajectory

__all__ = [
    "SCORER_NAMES",
    "RescoreOutcome",
    "ScoresInfo",
    "default_scorer",
    "judge_objects",
    "make_scorer",
    "needs_trajectory",
    "rescore_run",
    "resolve_judges",
    "score_result",
]

SCORER_NAMES = tuple(SCORERS.names(plugins=False))
"""The built-in scorers a run can name (``--scorer``); plugins add more (:data:`SCORERS`)."""

_DEFAULT_BY_DATASET = {
    "omnigaia": "omnigaia",
    "omni-deepsearch": "majority_vote",
    "omniagent": "omniagent",
    "mcq": "mcq",
    "offline-suite": "answer_in_reply",
    "terminal-tasks": "terminal-tasks",
}


def default_scorer(dataset: str) -> str:
    """The paper's scorer for ``dataset``: OmniGAIA's judge protocol, Omni-DeepSearch's majority
    vote, OmniAgent's per-type rewards, letters for MCQ; answer-set match otherwise."""
    return _DEFAULT_BY_DATASET.get(dataset, "answer_set")


def resolve_judges(scorer: str, names: Sequence[str]) -> list[str]:
    """The judge model names ``scorer`` will use: ``names``, else the ``bench`` settings.

    Raises :class:`BenchError` for an unknown scorer, a scorer that needs a judge and has none,
    judges given to a scorer that asks none, or several judges for a single-judge scorer.
    """
    use = SCORERS.get(scorer).judges
    chosen = list(names)
    settings = get_settings().bench
    if not chosen and use == "several":
        chosen = list(settings.judge_models)
    if not chosen and use != "none" and settings.judge_model:
        chosen = [settings.judge_model]
    if use in ("one", "several") and not chosen:
        raise BenchError(
            f"scorer {scorer} needs a judge: pass --judge provider:model, or set "
            "bench.judge_model (OMNILAB_BENCH__JUDGE_MODEL)"
        )
    if use == "none" and chosen and names:
        raise BenchError(f"scorer {scorer} asks no judge; drop --judge or choose another --scorer")
    if use in ("one", "optional") and len(chosen) > 1:
        raise BenchError(
            f"scorer {scorer} asks one judge ({len(chosen)} given); use --scorer majority_vote "
            "for several"
        )
    return chosen if use != "none" else []


def make_scorer(
    scorer: str, judges: Sequence[Model] = (), rules: ScoringRules | None = None
) -> Scorer:
    """The scorer named ``scorer`` over ``judges`` (models bound to role ``judge``), under
    ``rules`` when given (a :class:`BenchError` for a scorer that takes none)."""
    entry = SCORERS.get(scorer)
    if rules is None:
        return entry.build(judges)
    if entry.with_rules is None:
        raise BenchError(f"scorer {scorer} takes no scoring rules (judge input, verdict reading)")
    return entry.with_rules(judges, rules)


def judge_objects(scorer: str, names: Sequence[str]) -> list[Model]:
    """Judge models for ``names``, each with the role's response cache."""
    if not names:
        return []
    if SCORERS.get(scorer).judges == "several":
        return judge_models(list(names))
    return [role_model("judge", n) for n in names]


def needs_trajectory(scorer: object) -> bool:
    """Whether ``scorer`` declares ``needs_trajectory = True``: its ``score`` then takes the
    task's trajectory as the keyword ``trajectory`` (process rewards, tool-use checks)."""
    return bool(getattr(scorer, "needs_trajectory", False))


async def score_result(
    scorer: Scorer, task: Task, result: TaskResult, *, trajectory: Trajectory | None = None
) -> TaskResult:
    """``result`` with a fresh score of its prediction; a failed run stays as it is.

    A scorer that declares ``needs_trajectory`` gets ``trajectory`` too.

    A task the scorer cannot read (an MCQ label that is no option letter, a label without a
    number) becomes a failed task with the reason; model setup errors (bad key, unknown model)
    propagate, because they would fail every task alike.
    """
    if result.error is not None:
        return result
    try:
        if needs_trajectory(scorer):
            score = await scorer.score(task, result.prediction, trajectory=trajectory)  # type: ignore[call-arg]
        else:
            score = await scorer.score(task, result.prediction)
    except ValueError as e:
        return result.model_copy(update={"score": None, "error": f"cannot score: {e}"})
    extracted = score.extracted if score.extracted is not None else result.extracted
    return result.model_copy(update={"score": score, "extracted": extracted})


class ScoresInfo(BaseModel):
    """``scores/<name>.json``: what a re-scoring used."""

    name: str
    scorer: str
    judges: list[str] = Field(default_factory=list)
    source: str = "results.jsonl"
    tasks: int
    rescored: int
    """Tasks scored again (failed runs are copied unchanged)."""
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


class RescoreOutcome(BaseModel):
    """Where a re-scoring wrote, and the metrics of the new scores."""

    info: ScoresInfo
    path: Path
    summary: RunSummary


def _slug(text: str) -> str:
    # the scorer's own spelling stays (answer_in_reply), so --scores takes the name --scorer took
    return re.sub(r"[^a-z0-9._]+", "-", text.lower()).strip("-._")[:60] or "scores"


def _free_name(run: RunDir, base: str) -> str:
    name, n = base, 1
    while run.scores_file(name).exists() or (run.scores_dir / f"{name}.json").exists():
        n += 1
        name = f"{base}-{n}"
    return name


async def rescore_run(
    run: RunDir | str | Path,
    *,
    scorer_name: str,
    judges: Sequence[str],
    scorer: Scorer | None = None,
    name: str | None = None,
    data: Path | None = None,
    concurrency: int = 8,
    rules: ScoringRules | None = None,
) -> RescoreOutcome:
    """Score every prediction of ``run`` again and write ``scores/<name>.jsonl``.

    ``scorer`` overrides the one built from ``scorer_name`` and ``judges`` (tests, plugins).
    ``name`` defaults to the scorer and judge names, made unique; a given ``name`` that exists is
    a :class:`BenchError` (scores are never overwritten). ``data`` replaces the dataset path
    stored in ``run.json`` (the answers are read from it).

    The run may be another user's: its files are read as ``omnilab report`` reads them, never
    through a link nor from a FIFO (a linked ``results.jsonl`` or trajectory is refused with a
    one-line :class:`BenchError` or :class:`~omnilab.trajectory.TrajectoryError`).
    """
    run = (run if isinstance(run, RunDir) else RunDir(run)).untrusted()
    config = run.read_config()
    results = run.results()
    if not results:
        raise BenchError(f"{run.results_file} holds no results to score")
    if name is not None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise BenchError(f"scores name {name!r}: use letters, digits, '.', '_' and '-'")
        if run.scores_file(name).exists():
            raise BenchError(f"{run.scores_file(name)} exists; choose another --name")
    if run.scores_dir.is_symlink():  # written only into the run's own folder
        raise BenchError(f"{run.scores_dir} is a link; scores are not written through links")
    chosen = name or _free_name(run, _slug("-".join([scorer_name, *judges])))
    loaded = load_dataset(
        config.dataset,
        run.dataset_file(config, data),
        media_root=config.media_root,
        allow_outside_media_root=config.allow_outside_media_root,
    )
    tasks = {t.id: t for t in loaded.tasks}
    missing = [r.task_id for r in results if r.task_id not in tasks]
    if missing:
        raise BenchError(
            f"{len(missing)} results have no task in {data or config.data} (e.g. {missing[0]}); "
            "pass the run's dataset file with --data"
        )
    active = scorer or make_scorer(scorer_name, judge_objects(scorer_name, judges), rules)
    limit = asyncio.Semaphore(max(1, concurrency))
    target = run.scores_file(chosen)
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)

    async def one(result: TaskResult) -> TaskResult:
        async with limit:
            trajectory = None
            if needs_trajectory(active) and result.error is None:
                path = run.trajectory_file(result.task_id, result.sample)
                trajectory = await asyncio.to_thread(read_trajectory, path)
            return await score_result(active, tasks[result.task_id], result, trajectory=trajectory)

    rescored: list[TaskResult] = []
    async with ResultLog(partial) as log:
        for done in asyncio.as_completed([one(r) for r in results]):
            new = await done
            log.append(new)
            rescored.append(new)
    partial.replace(target)
    info = ScoresInfo(
        name=chosen,
        scorer=scorer_name,
        judges=list(judges),
        tasks=len(rescored),
        rescored=sum(1 for r in results if r.error is None),
    )
    write_atomic(run.scores_dir / f"{chosen}.json", info.model_dump_json(indent=2) + "\n")
    summary = summarize(rescored)
    write_atomic(
        run.scores_dir / f"{chosen}.metrics.json", summary.model_dump_json(indent=2) + "\n"
    )
    return RescoreOutcome(info=info, path=target, summary=summary)
