"""The papers' rewards, as omnilab's scorers compute them, in the signatures trainers call.

- :func:`compute_score` is verl's ``compute_score(data_source, solution_str, ground_truth,
  extra_info)`` (``custom_reward_function.path=.../omnilab/rl/rewards.py``,
  ``custom_reward_function.name=compute_score``): ``data_source`` names the dataset, whose
  paper scorer applies (:func:`~omnilab.bench.rescore.default_scorer`: OmniGAIA's exact match +
  judge, OmniAgent's eq. 2, Omni-DeepSearch's majority vote, ...), unless ``extra_info`` names
  another (``scorer``: e.g. ``omniagent-release`` for the released ``reward_manager/episode.py``,
  ``code-x-reward`` for Code-X's process-aware reward, which reads the run's ``trajectory``).
- :func:`reward_func` makes a TRL ``reward_funcs`` entry for a scorer (the dataset column
  ``answer`` holds the ground truth).
- :func:`group_advantages`, :func:`code_x_advantages` and :func:`taura_advantages` are the
  advantage functions (GRPO eq. 3, Code-X's group shaping of Table 10 with its dynamic filter,
  OmniAgent's TAURA eq. 4), from :mod:`omnilab.train.advantages`.

``extra_info`` keys read: ``scorer``, ``judges`` (model names), ``question``, ``options``
(``{"A": ...}``), ``task_type``, ``spans``, ``trajectory`` (a trajectory file, for scorers that
need the run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omnilab.bench.rescore import default_scorer, judge_objects, make_scorer, needs_trajectory
from omnilab.bench.scoring.base import Score
from omnilab.bench.task import AnswerSet, Task, TaskMetadata
from omnilab.train.advantages import (
    GroupStats,
    TauraTurns,
    gspo_advantages,
    taura_turns,
)
from omnilab.train.advantages import group_advantages as _grpo
from omnilab.trajectory.store import read_trajectory

__all__ = [
    "code_x_advantages",
    "compute_score",
    "group_advantages",
    "reward_func",
    "score",
    "taura_advantages",
]

group_advantages = _grpo
"""GRPO's group-normalised advantage (OmniAgent eq. 3), one per rollout of a group."""


def _answers(ground_truth: Any) -> AnswerSet:
    if isinstance(ground_truth, str):
        return AnswerSet(label=ground_truth)
    values = [str(v) for v in ground_truth]
    if not values:
        raise ValueError("ground_truth holds no answer")
    return AnswerSet(label=values[0], aliases=tuple(values[1:]))


def _task(data_source: str, ground_truth: Any, info: Mapping[str, Any]) -> Task:
    options = info.get("options")
    spans = info.get("spans")
    return Task(
        id=str(info.get("id", "rollout")),
        dataset=data_source,
        question=str(info.get("question", "")),
        answers=_answers(ground_truth),
        metadata=TaskMetadata(
            task_type=info.get("task_type"),
            options=dict(options) if options else None,
            spans=tuple(tuple(s) for s in spans) if spans else None,
        ),
    )


async def score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
) -> Score:
    """The full :class:`~omnilab.bench.scoring.base.Score` :func:`compute_score` reduces."""
    info = dict(extra_info or {})
    name = str(info.get("scorer") or default_scorer(data_source))
    judges = judge_objects(name, [str(j) for j in info.get("judges") or []])
    scorer = make_scorer(name, judges)
    task = _task(data_source, ground_truth, info)
    if needs_trajectory(scorer):
        path = info.get("trajectory")
        if not path:
            raise ValueError(f"scorer {name} needs extra_info['trajectory'] (the run's file)")
        trajectory = read_trajectory(Path(path))
        return await scorer.score(task, solution_str, trajectory=trajectory)  # type: ignore[call-arg]
    return await scorer.score(task, solution_str)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """verl's ``compute_score``: ``{"score": reward, "acc": correct, ...}`` (verl logs the
    extra keys). A scorer that could not decide (a judge error) scores 0 with ``error`` set."""
    found = asyncio.run(score(data_source, solution_str, ground_truth, extra_info))
    return {
        "score": float(found.value),
        "acc": bool(found.correct),
        "scorer": found.scorer,
        "error": found.error or "",
    }


def reward_func(
    scorer: str, *, answer_column: str = "answer", judges: Sequence[str] = ()
) -> Callable[..., list[float]]:
    """A TRL ``reward_funcs`` entry scoring each completion with ``scorer`` against the
    dataset column ``answer_column`` (a string or a list of acceptable answers)."""

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        truths = kwargs[answer_column]
        out = []
        for completion, truth in zip(completions, truths, strict=True):
            text = completion if isinstance(completion, str) else completion[-1]["content"]
            info = {"scorer": scorer, "judges": list(judges)}
            out.append(compute_score("rollout", text, truth, info)["score"])
        return out

    reward.__name__ = f"omnilab_{scorer.replace('-', '_')}"
    return reward


def code_x_advantages(
    rewards: Sequence[float], removed: Sequence[bool] | None = None, *, eps: float = 1e-6
) -> GroupStats:
    """Code-X's group shaping (Table 10): GRPO normalisation over the rollouts not removed,
    the group dropped when at most one is active or the rewards do not vary."""
    return gspo_advantages(rewards, removed or [False] * len(rewards), eps=eps)


def taura_advantages(
    rewards: Sequence[float], entropies: Sequence[Sequence[float | None]], *, eps: float = 1e-6
) -> TauraTurns:
    """OmniAgent's TAURA for one group: GRPO advantages (eq. 3) scaled per turn by the turn's
    mean token entropy over the group's mean turn entropy (eq. 4)."""
    return taura_turns(_grpo(rewards, eps=eps).advantages, entropies)
