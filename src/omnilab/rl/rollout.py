"""Rollouts for RL trainers: omnilab's agents run in the sandbox as ``eval`` runs them, through a
token-exact model, and each trajectory becomes rows of ids a trainer learns from directly.

``await rollout("jsonl", data=..., agent="tir", model="local:smollm2", samples=4)`` plans and runs
the tasks concurrently with :func:`omnilab.bench.runner.evaluate` (same scaffolds, tools, sandbox,
budgets, scorer and run folder), then links each trajectory's token traces into sequences
(:func:`~omnilab.rl.sequences.linked`): the traces as each scaffold returned them
(:class:`~omnilab.rl.recorded.RecordingAgent`), the same ones its file holds, so the files are
not read back; :func:`rollouts_of_run` reads them from a run folder. A trajectory usually holds
one sequence; an agent that purges or rewrites its context (``ota``) or calls the policy in
several contexts (``master``) yields one :class:`Rollout` per sequence, each with the task's
reward.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from omnilab.agents.base import Budgets
from omnilab.agents.registry import get_agent
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import Components, evaluate, new_config
from omnilab.models.model import Model
from omnilab.models.registry import get_model
from omnilab.models.token_trace import (
    TokenTrace,
    pack_floats,
    pack_ids,
    unpack_floats,
    unpack_ids,
)
from omnilab.models.tokens import token_exact
from omnilab.rl.recorded import RecordingAgent
from omnilab.rl.sequences import TokenSequence, linked
from omnilab.trajectory.token_calls import read_token_calls

__all__ = ["Rollout", "rollout", "rollouts_of_run"]

_PACKED = ("prompt_ids", "response_ids", "response_mask")


class Rollout(BaseModel):
    """One conversation of one sample of one task, as a trainer consumes it.

    ``response_mask`` is 1 exactly on the ids the policy sampled and 0 on template tokens and
    tool observations; ``response_logprobs`` holds the sampling logprob there and 0 elsewhere.
    """

    task_id: str
    sample: int = 0
    segment: int = 0
    """Which of the trajectory's sequences this is (0 unless the context was rewritten)."""
    tokenizer: str
    """What the ids belong to (``gguf:<file>``)."""
    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float]
    reward: float = 0.0
    """The task's score (0 when it failed or was not scored)."""
    reward_info: dict[str, Any] = Field(default_factory=dict)
    num_turns: int = 1
    """Model calls whose samples the response holds."""
    calls: list[str] = Field(default_factory=list)
    """The trajectory's model-call events those samples came from, in order."""
    trajectory: str = ""
    """The trajectory file the rollout was read from."""

    @model_validator(mode="after")
    def _aligned(self) -> Rollout:
        n = len(self.response_ids)
        if len(self.response_mask) != n or len(self.response_logprobs) != n:
            raise ValueError(
                f"response_ids ({n}), response_mask ({len(self.response_mask)}) and "
                f"response_logprobs ({len(self.response_logprobs)}) differ in length"
            )
        return self

    def to_row(self) -> dict[str, Any]:
        """A JSON-ready row with ids, mask and logprobs packed (base64 of little-endian
        ``uint32`` / ``float32`` arrays, see :mod:`omnilab.models.token_trace`)."""
        row = self.model_dump()
        for name in _PACKED:
            row[name] = pack_ids(row[name])
        row["response_logprobs"] = pack_floats(row["response_logprobs"])
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Rollout:
        """The rollout :meth:`to_row` wrote (packed or plain lists)."""
        data = dict(row)
        for name in _PACKED:
            if isinstance(data.get(name), str):
                data[name] = unpack_ids(data[name])
        if isinstance(data.get("response_logprobs"), str):
            data["response_logprobs"] = unpack_floats(data["response_logprobs"])
        return cls.model_validate(data)


def _reward_info(result: TaskResult) -> dict[str, Any]:
    score = result.score
    return {
        "scorer": score.scorer if score is not None else None,
        "correct": score.correct if score is not None else None,
        "extracted": score.extracted if score is not None else None,
        "error": result.error,
    }


def _rollout(result: TaskResult, path: Path, k: int, seq: TokenSequence) -> Rollout:
    n = len(seq.response_ids)
    if len(seq.response_mask) != n or len(seq.response_logprobs) != n:
        raise ValueError(f"{seq.calls} calls' response ids, mask and logprobs differ in length")
    # Built from values of the right types (a validated result, ids and logprobs read from
    # packed arrays), aligned as checked above: validating every id again cost more than the
    # rest of the row, to the same fields.
    return Rollout.model_construct(
        task_id=result.task_id,
        sample=result.sample,
        segment=k,
        tokenizer=seq.tokenizer,
        prompt_ids=seq.prompt_ids,
        response_ids=seq.response_ids,
        response_mask=seq.response_mask,
        response_logprobs=seq.response_logprobs,
        reward=result.score.value if result.score is not None else 0.0,
        reward_info=_reward_info(result),
        num_turns=seq.calls,
        calls=seq.call_ids,
        trajectory=str(path),
    )


def _from_file(path: Path) -> list[tuple[str, TokenTrace]] | None:
    return read_token_calls(path) if path.is_file() else None


def _rows(
    run: RunDir,
    results: Iterable[TaskResult],
    traces: Callable[[Path], list[tuple[str, TokenTrace]] | None],
) -> list[Rollout]:
    """The rollouts of ``results``, each result's token traces given by ``traces`` (``None``
    for a result without a trajectory)."""
    out: list[Rollout] = []
    opened: dict[str, list[int]] = {}  # first prompts unpacked once (a task's samples share one)
    for result in results:
        path = run.trajectory_file(result.task_id, result.sample)
        found = traces(path)
        if found is None:
            continue
        out += [_rollout(result, path, k, seq) for k, seq in enumerate(linked(found, opened))]
    return out


def rollouts_of_run(run_dir: str | Path) -> list[Rollout]:
    """The rollouts of a run folder made through a token-exact model (results in file order;
    a result whose trajectory holds no token traces gives none)."""
    run = RunDir(run_dir)
    return _rows(run, run.results(), _from_file)


def _policy(model: str | Model, tokenizer: Any) -> Model:
    plain = get_model(model, cache=False) if isinstance(model, str) else model
    return token_exact(plain, tokenizer=tokenizer)


async def rollout(
    tasks: str,
    *,
    agent: str,
    model: str | Model,
    samples: int = 1,
    data: str | Path | None = None,
    run_dir: str | Path | None = None,
    media_root: str | Path | None = None,
    protocol: str | None = None,
    agent_options: Mapping[str, Any] | None = None,
    tools: Sequence[str] | None = None,
    scorer: str | None = None,
    judges: Sequence[str] = (),
    budgets: Budgets | None = None,
    concurrency: int | None = None,
    seed: int = 0,
    tokenizer: Any = None,
) -> list[Rollout]:
    """Run ``samples`` rollouts of every task of dataset ``tasks`` (its file ``data``) with
    scaffold ``agent`` and the policy ``model`` made token-exact, concurrently, in the sandbox;
    the run folder (``run_dir``, a fresh temporary folder when unset) keeps the trajectories.
    ``tokenizer`` is the policy's for ``vllm:``/``sglang:`` servers (see
    :func:`~omnilab.models.tokens.token_exact`).

    Raises :class:`~omnilab.models.errors.ModelConfigError` for a model without a token-exact
    adapter and :class:`~omnilab.bench.errors.BenchError` for a bad dataset or option.
    """
    policy = _policy(model, tokenizer)
    config = new_config(
        tasks,
        data,  # a path or a URL (new_config fetches a dataset at a URL)
        agent=agent,
        model=policy.name,
        media_root=media_root,
        agent_options=agent_options,
        tools=tools,
        scorer=scorer,
        judges=judges,
        budgets=budgets,
        seed=seed,
        samples=samples,
        cache=False,
        protocol=protocol,
    )
    folder = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="rollout-"))
    # The rows are made from what the run just wrote, as rollouts_of_run(folder) makes them,
    # without reading it back: the results as they are logged, each trajectory's token traces
    # as its scaffold returned them (the file read only for a run the recorder did not see).
    agent_ = RecordingAgent(get_agent(config.agent, **config.agent_options))
    logged: list[TaskResult] = []
    outcome = await evaluate(
        config,
        folder,
        concurrency=concurrency,
        components=Components(agent=agent_, model=policy),
        on_result=logged.append,
    )
    if outcome.already_done or len(logged) != outcome.ran:
        return rollouts_of_run(folder)  # results logged before this call: the file has them

    def traces(path: Path) -> list[tuple[str, TokenTrace]] | None:
        found = agent_.take(str(path))
        return found if found is not None else _from_file(path)

    return _rows(RunDir(folder), logged, traces)
