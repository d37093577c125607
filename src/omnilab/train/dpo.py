"""OmniDPO pairs (OmniGAIA §4.4, eq. 3) from the failed rollouts of run folders.

For each failed rollout, a step judge that knows the correct answer (and the annotated solution
when the dataset has one) names the first erroneous step and a correction
(``prompts/dpo_step_judge.txt``). The agent is then re-run on the task: the steps before that one
are replayed exactly, the erroneous step is made again by the live model with the correction
shown to it for that call only (hindsight guidance, ``prompts/dpo_hindsight.txt``), and the run
goes on to its end. When the re-run is scored correct by the run's scorer, the pair is:

* ``prompt``: the exact context of the erroneous step (what the model was sent; the guidance is
  not part of it),
* ``chosen``: the corrected step (τ_win), ``rejected``: the original step (τ_lose),

as TRL's conversational DPO rows. TRL computes the DPO log-probabilities on the completions
only, so the loss covers the agent's own tokens (its reasoning and tool call) and never the
prompt, tool observations included, as the paper's masking asks. One pair corrects one error.

Every judged rollout gets one line in the log (the judge's reply, the step, the re-run and why a
pair was or was not made); re-runs are trajectories whose ``run_start`` points at the failed
run and its last replayed step.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from omnilab.agents.base import Agent, AgentContext, AgentTask
from omnilab.agents.registry import get_agent
from omnilab.agents.templates import render_in
from omnilab.bench.analysis import ERROR_CATEGORIES  # B.6: the judge's choices for the step
from omnilab.bench.executor import TaskJob, is_setup_error, task_seed
from omnilab.bench.run_dir import sample_stem
from omnilab.bench.runner import Components, build_executor
from omnilab.bench.scoring import Scorer
from omnilab.models.errors import ModelError
from omnilab.models.events import ModelCallEvent
from omnilab.models.model import Model
from omnilab.models.types import GenerateConfig, Message
from omnilab.train.dpo_rows import pair_row
from omnilab.train.explore_replay import BranchStep, BranchWriter, Replay, agent_calls, replay_model
from omnilab.train.explore_run import EXPLORE_OPTION
from omnilab.train.explore_verify import (
    MESSAGE_CHARS,
    read_json_object,
    render_messages,
    render_step,
)
from omnilab.train.runs import RecordFilter, RunRecord, iter_records
from omnilab.trajectory import Trajectory, read_trajectory

__all__ = ["JUDGE_FAILED", "DpoExport", "PairLog", "StepJudgment", "dpo_pairs", "judge_first_error"]


class StepJudgment(BaseModel):
    """The step judge's reply (parsed leniently: any category text, fields may be missing)."""

    first_error_step: int | None = None
    """1-based; ``None``: the judge found no wrong step."""
    category: str = ""
    explanation: str = ""
    correction: str = ""


def judgment_schema(steps: int) -> dict[str, Any]:
    """The JSON schema the judge's reply is constrained to where the provider supports it:
    every field required, the step one of 1..``steps`` (or null), the category one of
    :data:`ERROR_CATEGORIES`."""
    schema = StepJudgment.model_json_schema()
    step = {"type": "integer", "minimum": 1, "maximum": max(steps, 1)}
    schema["properties"]["first_error_step"] = {"anyOf": [step, {"type": "null"}]}
    schema["properties"]["category"] = {"type": "string", "enum": list(ERROR_CATEGORIES)}
    schema["required"] = list(schema["properties"])
    return schema


JUDGE_FAILED = "the judge failed:"
"""How a :class:`PairLog`'s ``reason`` starts when the judge's call failed."""


class PairLog(BaseModel):
    """One judged rollout: what the judge said and what became of it."""

    run: str
    task_id: str
    sample: int
    judge_reply: str
    judgment: StepJudgment | None = None
    rerun: str | None = None
    """The re-run's trajectory file."""
    rerun_correct: bool | None = None
    pair: bool = False
    reason: str = ""


@dataclass
class DpoExport:
    """The rows (TRL conversational DPO) and the log of every judged rollout."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    log: list[PairLog] = field(default_factory=list)


def render_trace(trajectory: Trajectory) -> tuple[str, list[ModelCallEvent]]:
    """The numbered steps of a run as the judge reads them, and those steps' model calls."""
    calls = [c for c in agent_calls(trajectory) if c.output is not None]
    blocks = []
    for number, call in enumerate(calls, 1):
        finished = number == len(calls) and trajectory.run_end is not None
        step = render_step(BranchStep(trajectory, call, paused=not finished))
        blocks.append(f"Step {number}:\n{step}")
    return "\n\n".join(blocks), calls


async def judge_first_error(
    judge: Model, record: RunRecord
) -> tuple[StepJudgment | None, str, list[ModelCallEvent], str | None]:
    """Ask ``judge`` for the first erroneous step of ``record``: the judgment (``None`` when the
    reply is unreadable), the reply, the steps, and what was wrong with the reply."""
    task = record.task
    assert task is not None
    trace, calls = render_trace(record.trajectory)
    solution = task.metadata.solution
    if isinstance(solution, tuple):
        solution = "\n".join(solution)
    prompt = render_in(
        "omnilab.train",
        "dpo_step_judge",
        question=task.question,
        solution=solution or "(none given)",
        answer=" / ".join(task.answers.all),
        trace=trace,
        steps=len(calls),
    )
    output = await judge.generate(
        [Message.user(prompt)],
        config=GenerateConfig(
            response_format={"json_schema": judgment_schema(len(calls)), "name": "judgment"}
        ),
    )
    data = read_json_object(output.text)
    if data is None:
        return None, output.text, calls, "the judge's reply holds no JSON object"
    try:
        return StepJudgment.model_validate(data), output.text, calls, None
    except ValidationError as e:
        return None, output.text, calls, f"the judge's reply does not fit: {e.errors()[0]['msg']}"


class _ReplayingAgent:
    """Runs ``inner`` with its agent model replaying ``replay``, pointing at ``parent``."""

    def __init__(self, inner: Agent, replay: Replay, parent: tuple[str, str]) -> None:
        self.inner = inner
        self.name = inner.name
        self.replay = replay
        self.parent = parent

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        writer = BranchWriter(
            ctx.trajectory, parent_run_id=self.parent[0], parent_event_id=self.parent[1]
        )
        ctx = AgentContext(
            model=replay_model(ctx.model, self.replay),
            roles=ctx.roles,
            tools=ctx.tools,
            budgets=ctx.budgets,
            workspace=ctx.workspace,
            trajectory=writer,
            on_event=ctx.on_event,
        )
        return await self.inner.run(task, ctx)


async def _rerun(
    record: RunRecord,
    judgment: StepJudgment,
    calls: list[ModelCallEvent],
    *,
    model: Model | None,
    scorer: Scorer | None,
    folder: Path,
) -> tuple[Path, bool | None]:
    """Re-run ``record``'s task from before the erroneous step with the correction; the re-run's
    trajectory file and whether it was scored correct."""
    assert record.task is not None and judgment.first_error_step is not None
    index = judgment.first_error_step - 1
    config = record.config
    options = {k: v for k, v in config.agent_options.items() if k != EXPLORE_OPTION}
    guidance = render_in(
        "omnilab.train",
        "dpo_hindsight",
        category=judgment.category or "an error",
        correction=judgment.correction or judgment.explanation,
    )
    start = record.trajectory.run_start
    run_id = start.run_id if start is not None else ""
    after = calls[index - 1].id if index > 0 else (start.id if start is not None else "")
    prefix = [c.output for c in calls[:index] if c.output is not None]
    agent = _ReplayingAgent(
        get_agent(config.agent, **options),
        Replay(prefix, live=None, guidance=guidance),
        (run_id, after),
    )
    executor = build_executor(config, Components(agent=agent, model=model, scorer=scorer))
    stem = sample_stem(record.task_id, record.sample)
    path = folder / f"{stem}.jsonl"
    workspace = folder / "workspaces" / stem
    seed = task_seed(config.seed, f"dpo:{record.task_id}", record.sample)
    job = TaskJob(task=record.task, sample=0, seed=seed, trajectory=path, workspace=workspace)
    result = await executor.run(job)
    with contextlib.suppress(OSError):
        workspace.parent.rmdir()
    return path, result.judged


async def dpo_pairs(
    folders: Sequence[str | Path],
    *,
    judge: Model,
    reruns: Path,
    model: Model | None = None,
    scorer: Scorer | None = None,
    keep: RecordFilter | None = None,
    limit: int | None = None,
    on_done: Callable[[PairLog, dict[str, Any] | None], None] | None = None,
) -> DpoExport:
    """DPO pairs from the failed rollouts of ``folders`` (see the module docstring).

    ``judge`` finds the first erroneous step; ``model`` makes the corrected step and the rest of
    the re-run (default: the run's own model, built from its name); ``scorer`` scores the re-runs
    (default: the run's). Re-runs are written under ``reruns``. ``limit`` stops after that many
    judged rollouts. ``on_done`` sees each judged rollout's log entry and row (``None``: no pair)
    as soon as it is decided (a caller writing them as they come loses nothing to a Ctrl-C)."""
    export = DpoExport()
    async for log, row in _judged(folders, judge, reruns, model, scorer, keep, limit):
        export.log.append(log)
        if row is not None:
            export.rows.append(row)
        if on_done is not None:
            on_done(log, row)
    return export


async def _judged(
    folders: Sequence[str | Path],
    judge: Model,
    reruns: Path,
    model: Model | None,
    scorer: Scorer | None,
    keep: RecordFilter | None,
    limit: int | None,
) -> AsyncIterator[tuple[PairLog, dict[str, Any] | None]]:
    count = 0
    for record in iter_records(folders, keep):
        if limit is not None and count >= limit:
            return
        if record.result.judged is not False:
            continue  # only rollouts scored wrong (crashed ones have no answer to correct)
        count += 1
        log = PairLog(
            run=str(record.run.path), task_id=record.task_id, sample=record.sample, judge_reply=""
        )
        row = await _judge_one(record, log, judge, reruns / record.run.path.name, model, scorer)
        yield log, row


async def _judge_one(
    record: RunRecord,
    log: PairLog,
    judge: Model,
    folder: Path,
    model: Model | None,
    scorer: Scorer | None,
) -> dict[str, Any] | None:
    """The pair of one failed rollout, or ``None``; ``log`` records what happened."""
    if record.task is None:
        log.reason = "the run's dataset file is gone or no longer lists the task"
        return None
    try:
        judgment, log.judge_reply, calls, problem = await judge_first_error(judge, record)
    except ModelError as e:
        if is_setup_error(e):
            raise  # a bad key or model name fails every rollout alike
        log.reason = f"{JUDGE_FAILED} {e}"
        return None
    log.judgment = judgment
    if judgment is None:
        log.reason = problem or "unreadable judgment"
        return None
    step = judgment.first_error_step
    if step is None or not 1 <= step <= len(calls):
        log.reason = f"no erroneous step in 1..{len(calls)} (the judge said {step})"
        return None
    path, correct = await _rerun(record, judgment, calls, model=model, scorer=scorer, folder=folder)
    log.rerun, log.rerun_correct = str(path), correct
    if correct is not True:
        log.reason = "the corrected re-run did not succeed"
        return None
    row, why_not = _pair(calls[step - 1], read_trajectory(path), step - 1)
    if row is None:
        log.reason = why_not
        return None
    log.pair, log.reason = True, f"step {step} corrected"
    return row


def _pair(
    original: ModelCallEvent, rerun: Trajectory, index: int
) -> tuple[dict[str, Any] | None, str]:
    """The pair of the original step and the re-run's step ``index``, or why there is none."""
    calls = agent_calls(rerun)
    new = calls[index] if len(calls) > index else None
    if new is None or new.output is None or new.sent is None or original.sent is None:
        return None, "the re-run made no corrected step"
    if original.output is None:
        return None, "the original step has no reply"
    # Tools ran again on replay: the pair is valid only if the context came out the same.
    same = render_messages(new.sent.messages, limit=MESSAGE_CHARS * 100) == render_messages(
        original.sent.messages, limit=MESSAGE_CHARS * 100
    )
    if not same:
        return None, "the replayed prefix differs from the original (tools answered otherwise)"
    if render_messages([new.output.message]) == render_messages([original.output.message]):
        return None, "the corrected step repeats the original"
    return pair_row(original, new.output), ""
