"""Hindsight-guided tree exploration (OmniGAIA §4.2) as an agent that wraps any scaffold.

:class:`ExploringAgent` runs the scaffold it wraps as a tree search over its steps (calls of the
agent's model). Starting from the root, each expansion runs ``branches`` branches of the current
node (the node's replies replayed, one new step sampled with its own seed, see
:mod:`omnilab.train.explore_replay`); a verifier that knows the correct answer (the model of
role ``verifier``) keeps or prunes each new step and scores it; kept steps become child nodes,
explored depth first, best score first. The first kept step that ends the run with an answer is
a successful path: the task's own trajectory is that path replayed (no model calls), its
``run_start`` pointing at the leaf branch, with the verifier's score after each step
(``step_score`` events named ``verifier``). When ``max_expansions`` expansions find none, the
task's trajectory says so (status ``error``) and the branches stay for inspection.

Branches live beside the run's trajectories, ``branches/<task>/<node>.jsonl`` (node ``r.0.2``:
the third branch of the first branch of the root), with the search's journal ``tree.jsonl``
(one line per expansion: each candidate's verdict and the verifier's reply). A task that was
interrupted starts again from its journal and its finished branch files, so a resumed run makes
no model call twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import BaseModel, Field

from omnilab.agents.base import Agent, AgentConfigError, AgentContext, AgentTask
from omnilab.models.model import Model
from omnilab.models.types import ModelOutput
from omnilab.train.explore_replay import (
    BranchStep,
    BranchWriter,
    Replay,
    branch_step,
    finished_trajectory,
    replay_model,
    run_branch,
)
from omnilab.train.explore_verify import render_messages, render_step, verify
from omnilab.trajectory import (
    ErrorEvent,
    Event,
    RunEnd,
    RunStart,
    StepScore,
    Trajectory,
)
from omnilab.trajectory.events import ModelCall

__all__ = [
    "VERIFIER_ROLE",
    "Accept",
    "CandidateRecord",
    "ExpansionRecord",
    "ExploreOptions",
    "ExploringAgent",
    "branch_folder",
    "read_journal",
]

VERIFIER_ROLE = "verifier"

Accept = Callable[[str, Trajectory], Awaitable[bool]]
"""``accept(task_id, trajectory)``: whether a finished branch's answer is correct (the run's
scorer), checked before a path the verifier kept counts as successful."""


class ExploreOptions(BaseModel):
    """How wide and how long the search goes."""

    branches: int = Field(default=3, ge=1, le=16)
    """Candidate next steps sampled per expansion (OmniGAIA: k = 3)."""
    max_expansions: int = Field(default=30, ge=1)
    """Expansions per task before the search gives up."""
    parallel: bool = True
    """Run the branches of an expansion at once (each has its own seed, file and workspace);
    off: one after the other, in order (scripted models that answer in call order)."""


class CandidateRecord(BaseModel):
    """One branch of an expansion and the verifier's word on its new step."""

    name: str
    run_id: str
    status: str
    finished: bool
    keep: bool
    score: float = 0.0
    reason: str = ""


class ExpansionRecord(BaseModel):
    """One line of ``tree.jsonl``: a node, its branches, and the verifier's reply."""

    node: str
    candidates: list[CandidateRecord]
    verifier_reply: str | None = None
    """``None`` when no candidate needed the verifier (all failed or repeated a sibling)."""
    verifier_problem: str | None = None


def branch_folder(trajectory_path: Path) -> Path:
    """Where the branches of the task whose trajectory is ``trajectory_path`` go:
    ``<run>/branches/<stem>/``."""
    return trajectory_path.parent.parent / "branches" / trajectory_path.stem


def read_journal(path: Path) -> dict[str, ExpansionRecord]:
    """The expansions already recorded in ``path`` by node (a line cut short by a kill is
    skipped: that expansion runs again, from its finished branch files)."""
    found: dict[str, ExpansionRecord] = {}
    if not path.is_file():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            record = ExpansionRecord.model_validate_json(line)
            found[record.node] = record
    return found


@dataclass(frozen=True)
class _Node:
    name: str
    replies: tuple[ModelOutput, ...]
    parent: tuple[str | None, str | None] = (None, None)
    """The branch run and the model call that made this node's last step."""
    scores: tuple[CandidateRecord, ...] = ()
    """The verdicts on the steps of this path, in order."""


def _seed(base: int | None, task_id: str, node: str, branch: int) -> int:
    digest = hashlib.sha256(f"{base}:{task_id}:{node}:{branch}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _same_step(a: ModelOutput | None, b: ModelOutput | None) -> bool:
    if a is None or b is None:
        return False
    ma, mb = a.message, b.message
    calls_a = [(c.name, c.arguments) for c in ma.tool_calls]
    calls_b = [(c.name, c.arguments) for c in mb.tool_calls]
    return ma.text.strip() == mb.text.strip() and calls_a == calls_b


class ExploringAgent:
    """Runs ``inner`` as a hindsight-guided tree search (see the module docstring).

    ``answers`` gives the correct answers by task id (the verifier's hindsight); the verifier is
    the context's model of role ``verifier``, which the wrapped scaffold does not see. With
    ``accept``, a final answer the verifier keeps must also pass it (the run's scorer), so a
    verifier fooled by a wrong answer does not end the search.
    """

    name = "explore"

    def __init__(
        self,
        inner: Agent,
        answers: Mapping[str, Sequence[str]],
        options: ExploreOptions | None = None,
        *,
        accept: Accept | None = None,
    ) -> None:
        self.inner = inner
        self.answers = {k: list(v) for k, v in answers.items()}
        self.options = options or ExploreOptions()
        self.accept = accept

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        verifier = ctx.roles.get(VERIFIER_ROLE)
        if verifier is None:
            raise AgentConfigError("tree exploration needs a model of role 'verifier'")
        if task.id not in self.answers:
            raise AgentConfigError(f"no correct answer known for task {task.id!r}")
        roles = {k: v for k, v in ctx.roles.items() if k != VERIFIER_ROLE}
        search = _Search(self, task, replace(ctx, roles=roles), verifier)
        leaf = await search.run()
        if leaf is None:
            return self._no_path(task, ctx, search)
        return await self._write_path(task, replace(ctx, roles=roles), leaf, search.stats)

    async def _write_path(
        self, task: AgentTask, ctx: AgentContext, leaf: _Node, stats: Mapping[str, float]
    ) -> Trajectory:
        """The successful path replayed into the task's own trajectory."""
        scores = iter(leaf.scores)

        def verdict_after(event: Event) -> list[Event]:
            if not isinstance(event, ModelCall) or event.role != "agent" or event.error:
                return []
            record = next(scores, None)
            if record is None:
                return []
            details = {"branch": record.name, "keep": record.keep, "reason": record.reason}
            return [
                StepScore(
                    target_id=event.id,
                    value=record.score,
                    name=VERIFIER_ROLE,
                    details=details,
                    parent_id=event.id,
                    context_id=event.context_id,
                )
            ]

        writer = BranchWriter(
            ctx.trajectory,
            parent_run_id=leaf.parent[0],
            parent_event_id=leaf.parent[1],
            after=verdict_after,
            end_stats=stats,
        )
        replayed = replace(
            ctx, model=replay_model(ctx.model, Replay(leaf.replies, live=0)), trajectory=writer
        )
        return await self.inner.run(task, replayed)

    def _no_path(self, task: AgentTask, ctx: AgentContext, search: _Search) -> Trajectory:
        message = (
            f"tree exploration found no successful path in {search.expansions} expansion(s); the "
            f"branches are in {branch_folder(ctx.trajectory.path)}"
        )
        events: list[Event] = [
            RunStart(
                run_id=ctx.trajectory.run_id,
                task_id=task.id,
                question=task.question,
                inputs=list(task.inputs),
                agent=self.inner.name,
                models={"agent": ctx.model.name},
                config={"explore": self.options.model_dump()},
            ),
            ErrorEvent(error_kind="explore", message=message),
            RunEnd(status="error", wall_s=0.0, turns=0, stats=dict(search.stats)),
        ]
        for event in events:
            ctx.trajectory.emit(event)
        return Trajectory(header=ctx.trajectory.header, events=events, path=ctx.trajectory.path)


class _Search:
    """The state of one task's search."""

    def __init__(
        self, owner: ExploringAgent, task: AgentTask, ctx: AgentContext, verifier: Model
    ) -> None:
        self.owner = owner
        self.task = task
        self.ctx = ctx
        self.verifier = verifier
        self.folder = branch_folder(ctx.trajectory.path)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.journal_path = self.folder / "tree.jsonl"
        self.journal = read_journal(self.journal_path)
        self.expansions = 0
        self.stats: dict[str, float] = {
            "explore_expansions": 0,
            "explore_branch_runs": 0,
            "explore_branch_tokens": 0,
            "explore_verifier_calls": 0,
            "explore_verifier_tokens": 0,
        }
        """What the search cost this process (branches and verdicts reused from an earlier
        process are not counted again): written into the task's ``run_end`` stats."""

    async def run(self) -> _Node | None:
        stack = [_Node("r", ())]
        options = self.owner.options
        while stack and self.expansions < options.max_expansions:
            node = stack.pop()
            self.expansions += 1
            self.stats["explore_expansions"] += 1
            steps = await self._expand(node)
            record = self.journal.get(node.name) or await self._judge(node, steps)
            paused: list[_Node] = []
            answered: list[_Node] = []
            for step, verdict in zip(steps, record.candidates, strict=True):
                if not verdict.keep or step.reply is None or step.call is None:
                    continue
                start = step.trajectory.run_start
                child = _Node(
                    verdict.name,
                    (*node.replies, step.reply),
                    (start.run_id if start is not None else None, step.call.id),
                    (*node.scores, verdict),
                )
                if not step.finished:
                    paused.append(child)
                elif step.trajectory.status == "answered":
                    answered.append(child)
            if answered:
                return max(answered, key=lambda c: c.scores[-1].score)
            # Depth first, the best-scored child on top of the stack.
            stack.extend(sorted(paused, key=lambda c: c.scores[-1].score))
        return None

    async def _expand(self, node: _Node) -> list[BranchStep]:
        count = self.owner.options.branches
        if not self.owner.options.parallel:
            return [await self._branch(node, i) for i in range(count)]
        # A task group: a branch that raises (a bad key) cancels its siblings.
        async with asyncio.TaskGroup() as group:
            running = [group.create_task(self._branch(node, i)) for i in range(count)]
        return [task.result() for task in running]

    async def _branch(self, node: _Node, index: int) -> BranchStep:
        name = f"{node.name}.{index}"
        path = self.folder / f"{name}.jsonl"
        done = finished_trajectory(path)
        if done is None:
            base = self.ctx.model
            seed = _seed(base.seed, self.task.id, node.name, index)
            real = base.bound(seed=seed, sample=seed)
            workspace = self.folder / "workspaces" / name
            done = await run_branch(
                self.owner.inner,
                self.task,
                self.ctx,
                real=real,
                replay=Replay(node.replies, live=1),
                path=path,
                parent=node.parent,
                workspace=workspace,
            )
            with contextlib.suppress(OSError):  # keep them only when the branch left files
                workspace.rmdir()
                workspace.parent.rmdir()
            self.stats["explore_branch_runs"] += 1
            self.stats["explore_branch_tokens"] += sum(
                c.usage.total_tokens for c in done.model_calls if not c.cached
            )
        return branch_step(done, len(node.replies))

    async def _judge(self, node: _Node, steps: list[BranchStep]) -> ExpansionRecord:
        records: list[CandidateRecord] = []
        asked: list[int] = []
        for i, step in enumerate(steps):
            run_id = step.trajectory.run_start.run_id if step.trajectory.run_start else ""
            record = CandidateRecord(
                name=f"{node.name}.{i}",
                run_id=run_id,
                status=str(step.trajectory.status),
                finished=step.finished,
                keep=False,
            )
            reply = step.reply
            twin = next((j for j in asked if _same_step(steps[j].reply, reply)), None)
            if reply is None:
                record.reason = "no new step: the run ended or the model call failed"
            elif step.finished and step.trajectory.status != "answered":
                record.reason = f"the run ended without an answer ({step.trajectory.status})"
            elif twin is not None:
                record.reason = f"the same step as candidate {twin + 1}"
            else:
                asked.append(i)
            records.append(record)
        out = ExpansionRecord(node=node.name, candidates=records)
        if asked:
            first = steps[asked[0]]
            sent = first.call.sent if first.call is not None else None
            path = render_messages(sent.messages) if sent is not None else ""
            verdicts, reply_text, problem, tokens = await verify(
                self.verifier,
                question=self.task.question,
                answers=self.owner.answers[self.task.id],
                path=path,
                candidates=[render_step(steps[i]) for i in asked],
            )
            for i, verdict in zip(asked, verdicts, strict=True):
                records[i].keep, records[i].score = verdict.keep, verdict.score
                records[i].reason = verdict.reason
            out.verifier_reply, out.verifier_problem = reply_text, problem
            self.stats["explore_verifier_calls"] += 1
            self.stats["explore_verifier_tokens"] += tokens
        accept = self.owner.accept
        for record, step in zip(records, steps, strict=True):
            # Checked here, before the journal line: a resumed search does not score again.
            checked = accept is not None and record.keep and step.finished
            if checked and accept is not None and not await accept(self.task.id, step.trajectory):
                record.keep = False
                said = f" (the verifier: {record.reason})" if record.reason else ""
                record.reason = f"the run's scorer found the answer wrong{said}"
        with self.journal_path.open("a", encoding="utf-8") as f:
            f.write(out.model_dump_json() + "\n")
        self.journal[node.name] = out
        return out
