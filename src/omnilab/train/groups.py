"""RL groups from runs: trajectory rewards, group advantages and TAURA turn advantages.

A run made with ``--samples G`` holds G rollouts of every task; they form the task's group.
:func:`export_groups` reads the rollouts through :mod:`omnilab.train.runs`, takes each one's
reward (the run's score, or a fresh score by any registered scorer), computes the advantages of
:mod:`omnilab.train.advantages` and writes one JSONL row per trajectory, with its agent turns,
plus ``FILE.meta.json`` saying how the numbers were made (advantage, std, entropy
approximation, reward source, dropped groups).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, assert_never

from pydantic import BaseModel, Field

from omnilab._version import __version__
from omnilab.bench.errors import BenchError
from omnilab.bench.run_dir import write_atomic
from omnilab.bench.scoring.code_x_group import Rollout as CodeXRollout
from omnilab.bench.scoring.code_x_group import length_factors
from omnilab.train.advantages import (
    ENTROPY_METHODS,
    EPS,
    EntropyMethod,
    GroupStats,
    StdKind,
    group_advantages,
    gspo_advantages,
    mean_entropy,
    taura_turns,
)
from omnilab.train.runs import RecordFilter, RunRecord, iter_records, task_groups

__all__ = [
    "AdvantageKind",
    "GroupExport",
    "GroupOptions",
    "GroupRow",
    "TurnRow",
    "agent_turns",
    "build_rows",
    "export_groups",
    "rescore_records",
]

AdvantageKind = Literal["grpo", "gspo", "taura"]
MissingEntropy = Literal["error", "uniform"]

_ASK_LOGPROBS = "rerun with -O 'generate={\"top_logprobs\": 5}'"


@dataclass(frozen=True)
class GroupOptions:
    """How rewards become advantages."""

    advantage: AdvantageKind = "grpo"
    std: StdKind = "sample"
    """Standard deviation of the group's rewards: ``sample`` (n-1, verl/TRL) or ``population``."""
    eps: float = EPS
    entropy: EntropyMethod = "renormalized"
    role: str = "agent"
    """Whose model calls are turns (side calls of a perception or judge model are not)."""
    missing_entropy: MissingEntropy = "error"
    """TAURA with a turn that has no logprobs: stop (``error``) or give it weight 1."""
    length_penalty: bool = True
    """GSPO over ``code-x-reward`` scores: apply Table 10's group-level length penalty (alpha
    0.2, f_min 0.5) to the gated-correct rollouts before the advantages, as Code-X trains."""


class TurnRow(BaseModel):
    """One agent turn (one model call) of a trajectory."""

    call: int
    """Index of the call in the trajectory's calls (``Trajectory.contexts()``)."""
    context_id: str | None = None
    tokens: int
    """Generated tokens (from the logprobs, else the usage)."""
    entropy: float | None
    """``H_{i,k}``, the mean token entropy; ``None`` when the call recorded no logprobs."""
    weight: float
    """TAURA's ``w_{i,k}``; 1 for GRPO and GSPO (sequence-level)."""
    advantage: float
    """The advantage of every token of this turn."""


class GroupRow(BaseModel):
    """One trajectory of a group, as a trainer reads it."""

    task_id: str
    sample: int
    run: str
    trajectory: str
    reward: float
    advantage: float
    """The trajectory advantage ``A_i``."""
    group_size: int
    group_mean: float
    group_std: float
    turns: list[TurnRow] = Field(default_factory=list)


@dataclass(frozen=True)
class _Turn:
    call: int
    context_id: str | None
    tokens: int
    entropy: float | None
    why_none: str = ""


def agent_turns(record: RunRecord, options: GroupOptions) -> list[_Turn]:
    """The answered model calls of ``options.role`` in ``record``'s trajectory, with their mean
    token entropy (``None`` and the reason when it cannot be computed)."""
    turns: list[_Turn] = []
    contexts = record.trajectory.contexts()
    answered = [c for c in contexts if c.output is not None]
    if answered and not any(c.role == options.role for c in answered):
        seen = sorted({c.role or "none" for c in answered})
        raise BenchError(
            f"{record.trajectory_path} has no model call of role {options.role!r} (roles: "
            f"{', '.join(seen)}); pass --role with the policy's role"
        )
    for index, context in enumerate(contexts):
        output = context.output
        if context.role != options.role or output is None:
            continue
        if output.logprobs is None:
            turns.append(
                _Turn(index, context.context_id, output.usage.completion_tokens, None, "logprobs")
            )
            continue
        try:
            entropy = mean_entropy(output.logprobs, options.entropy)
        except ValueError:
            turns.append(
                _Turn(index, context.context_id, len(output.logprobs), None, "top_logprobs")
            )
            continue
        turns.append(_Turn(index, context.context_id, len(output.logprobs), entropy))
    return turns


def _read_turns(record: RunRecord, options: GroupOptions) -> list[_Turn]:
    turns = agent_turns(record, options)
    # RunRecord caches its trajectory (a cached_property): drop it once read, so memory holds
    # the turns of one group at a time, not every trajectory of the runs.
    record.__dict__.pop("trajectory", None)
    return turns


def _missing(record: RunRecord, turn: _Turn) -> BenchError:
    where = f"{record.run.path} {record.task_id} sample {record.sample}, call {turn.call}"
    if turn.why_none == "top_logprobs":
        return BenchError(
            f"{where} recorded logprobs without top_logprobs, so its entropy is unknown; "
            f"{_ASK_LOGPROBS}, or use --entropy surprisal"
        )
    return BenchError(
        f"{where} recorded no logprobs, so TAURA has no turn entropy; {_ASK_LOGPROBS}, "
        "or pass --missing-entropy uniform (weight 1 for such turns)"
    )


@dataclass
class _GroupResult:
    rows: list[GroupRow]
    stats: GroupStats
    removed: int
    uniform: bool


def _removed(record: RunRecord) -> bool:
    """A removed rollout (Code-X §3.2): the run failed, or its scorer says so (code-x-reward
    marks a timeout, step limit or context overflow without an answer ``removed``)."""
    score = record.result.score
    return record.result.error is not None or (
        score is not None and score.details.get("removed") == "yes"
    )


def _code_x_rollout(record: RunRecord) -> CodeXRollout | None:
    score = record.result.score
    if score is None or score.scorer != "code-x-reward":
        return None
    d = score.details
    return CodeXRollout(
        correct=bool(score.correct),
        removed=_removed(record),
        modality_match=d.get("modality_match", "yes") == "yes",
        n_tool=int(float(d.get("n_tool") or 0)),
        steps=int(float(d.get("steps") or 1)),
    )


def _length_shaped(members: Sequence[RunRecord], rewards: list[float]) -> list[float]:
    """Rewards after Code-X's length penalty, when every member has a code-x-reward score."""
    rollouts = [_code_x_rollout(m) for m in members]
    if not rollouts or any(r is None for r in rollouts):
        return rewards
    factors = length_factors([r for r in rollouts if r is not None])
    return [r * f for r, f in zip(rewards, factors, strict=True)]


def _group(members: Sequence[RunRecord], options: GroupOptions) -> _GroupResult:
    rewards = [m.reward for m in members]
    removed = [_removed(m) for m in members]
    kind = options.advantage
    if kind == "gspo" and options.length_penalty:
        rewards = _length_shaped(members, rewards)
    if kind == "gspo":
        stats = gspo_advantages(rewards, removed, std=options.std, eps=options.eps)
    elif kind == "grpo" or kind == "taura":
        stats = group_advantages(rewards, std=options.std, eps=options.eps)
        removed = [False] * len(members)
    else:
        assert_never(kind)
    kept = [i for i, gone in enumerate(removed) if not gone and stats.dropped is None]
    turns = {i: _read_turns(members[i], options) for i in kept}
    weights = {i: [1.0] * len(turns[i]) for i in kept}
    uniform = False
    if kind == "taura" and kept:
        if options.missing_entropy == "error":
            for i in kept:
                for turn in turns[i]:
                    if turn.entropy is None:
                        raise _missing(members[i], turn)
        taura = taura_turns(
            [stats.advantages[i] for i in kept], [[t.entropy for t in turns[i]] for i in kept]
        )
        weights = dict(zip(kept, taura.weights, strict=True))
        uniform = taura.uniform
    rows = [
        GroupRow(
            task_id=members[i].task_id,
            sample=members[i].sample,
            run=str(members[i].run.path),
            trajectory=str(members[i].trajectory_path),
            reward=rewards[i],
            advantage=stats.advantages[i],
            group_size=len(members),
            group_mean=stats.mean,
            group_std=stats.std,
            turns=[
                TurnRow(
                    call=t.call,
                    context_id=t.context_id,
                    tokens=t.tokens,
                    entropy=t.entropy,
                    weight=w,
                    advantage=stats.advantages[i] * w,
                )
                for t, w in zip(turns[i], weights[i], strict=True)
            ],
        )
        for i in kept
    ]
    return _GroupResult(rows, stats, sum(removed), uniform)


@dataclass
class GroupExport:
    """What :func:`export_groups` wrote."""

    path: Path
    meta_path: Path
    rows: int
    groups: int
    mean_reward: float
    dropped: dict[str, str] = field(default_factory=dict)
    """Task id -> why its group was dropped (GSPO)."""
    removed: int = 0
    """Rollouts left out as removed (failed runs, GSPO's active-only baseline)."""
    singletons: int = 0
    """Groups of one rollout (advantage 0: run with --samples G >= 2)."""
    uniform: int = 0
    """TAURA groups whose mean turn entropy was 0 (weights 1)."""
    written: list[dict[str, Any]] = field(default_factory=list)
    """The rows as written (for ``--check``'s round trip)."""


def build_rows(
    records: Sequence[RunRecord], options: GroupOptions
) -> tuple[list[GroupRow], GroupExport]:
    """The rows of every group of ``records`` and the counts of the summary (``path`` unset)."""
    rows: list[GroupRow] = []
    summary = GroupExport(Path(), Path(), 0, 0, 0.0)
    for task_id, members in task_groups(records).items():
        result = _group(members, options)
        summary.groups += 1
        summary.removed += result.removed
        summary.uniform += int(result.uniform)
        summary.singletons += int(len(members) == 1)
        if result.stats.dropped is not None:
            summary.dropped[task_id] = result.stats.dropped
        rows.extend(result.rows)
    summary.rows = len(rows)
    summary.mean_reward = sum(r.reward for r in rows) / len(rows) if rows else 0.0
    return rows, summary


async def rescore_records(
    records: Sequence[RunRecord],
    scorer_name: str,
    judges: Sequence[str] = (),
    *,
    concurrency: int = 8,
) -> list[RunRecord]:
    """``records`` with each result scored again by the registered scorer ``scorer_name`` (the
    trajectory handed to scorers that declare ``needs_trajectory``, as ``omnilab score`` does).
    Failed runs keep their result (reward 0)."""
    from omnilab.bench.rescore import judge_objects, make_scorer, needs_trajectory, score_result

    scorer = make_scorer(scorer_name, judge_objects(scorer_name, judges))
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(record: RunRecord) -> RunRecord:
        if record.result.error is not None:
            return record
        if record.task is None:
            raise BenchError(
                f"{record.run.path}: task {record.task_id} is not in the run's dataset file "
                f"{record.config.data}; --reward needs the task's answer"
            )
        async with limit:
            trajectory = None
            if needs_trajectory(scorer):
                trajectory = await asyncio.to_thread(lambda: record.trajectory)
            result = await score_result(scorer, record.task, record.result, trajectory=trajectory)
        return dataclasses.replace(record, result=result, _trajectory=trajectory)

    return list(await asyncio.gather(*(one(r) for r in records)))


def _meta(
    options: GroupOptions, folders: Sequence[str | Path], reward: str, summary: GroupExport
) -> dict[str, object]:
    return {
        "format": "omnilab-rl-groups",
        "version": 1,
        "omnilab": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": [str(f) for f in folders],
        "reward": reward,
        "advantage": options.advantage,
        "std": options.std,
        "eps": options.eps,
        "role": options.role,
        "entropy": {"method": options.entropy, "approximation": ENTROPY_METHODS[options.entropy]},
        "missing_entropy": options.missing_entropy,
        "rows": summary.rows,
        "groups": summary.groups,
        "dropped": summary.dropped,
        "removed": summary.removed,
        "singletons": summary.singletons,
        "uniform_groups": summary.uniform,
    }


def export_groups(
    folders: Sequence[str | Path],
    out: Path,
    options: GroupOptions | None = None,
    *,
    reward: str | None = None,
    judges: Sequence[str] = (),
    keep: RecordFilter | None = None,
) -> GroupExport:
    """Write the groups of ``folders`` to ``out`` (JSONL) and ``out.meta.json``.

    ``reward`` names a registered scorer to score every rollout again (default: the run's own
    score). GSPO reads failed runs too (they are its removed rollouts); GRPO and TAURA keep
    ``keep``'s choice (failed runs left out by default).
    """
    options = options or GroupOptions()
    keep = keep or RecordFilter()
    if options.advantage == "gspo":
        keep = dataclasses.replace(keep, include_failed=True)
    records = list(iter_records(folders, keep))
    if not records:
        raise BenchError(f"no rollouts to export in {', '.join(map(str, folders))}")
    if reward is not None:
        records = asyncio.run(rescore_records(records, reward, judges))
    rows, summary = build_rows(records, options)
    summary.path = out
    summary.meta_path = out.with_name(out.name + ".meta.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    summary.written = [r.model_dump(mode="json") for r in rows]
    write_atomic(out, "".join(json.dumps(r) + "\n" for r in summary.written))
    meta = _meta(options, folders, reward or "score", summary)
    write_atomic(summary.meta_path, json.dumps(meta, indent=2) + "\n")
    return summary
