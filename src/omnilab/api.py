"""``omnilab.ask(files, question)``: one question about some files, answered by an agent.

Each call gets its own run folder (``agents.runs_dir/<time>-<id>/`` unless ``run_dir`` is
given) holding ``trajectory.jsonl`` (every step, written as it happens) and ``workspace/`` (what
tools made: frames, sandboxed code's files).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask, Budgets, EventHook
from omnilab.agents.registry import get_agent
from omnilab.config import get_settings
from omnilab.errors import OmnilabError
from omnilab.inputs import InputSet
from omnilab.models.model import Model
from omnilab.models.registry import get_model
from omnilab.models.types import GenerateConfig
from omnilab.tools.base import Tool
from omnilab.trajectory import RunStatus, Trajectory, TrajectoryWriter

__all__ = ["AskResult", "ask", "ask_async", "new_run_dir"]


@dataclass(frozen=True)
class AskResult:
    """What an ask run produced."""

    answer: str | None
    """The extracted final answer; ``None`` when the run gave none."""
    status: RunStatus | str
    """``answered``, ``no_answer``, ``error`` or ``budget``."""
    trajectory: Trajectory
    trajectory_path: Path
    workspace: Path


def new_run_dir(root: Path | None = None) -> Path:
    """A fresh folder under ``root`` (default ``agents.runs_dir``) named ``<time>-<id>``."""
    base = root if root is not None else get_settings().agents.runs_dir
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = base.expanduser() / f"{stamp}-{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True, exist_ok=False)
    return folder


def _model(model: str | Model | None) -> Model:
    return model if isinstance(model, Model) else get_model(model)


async def ask_async(
    files: Sequence[str | Path],
    question: str,
    *,
    model: str | Model | None = None,
    agent: str = "tir",
    mode: str | None = None,
    variant: str | None = None,
    tools: Sequence[str | Tool] | None = None,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    perception_model: str | Model | None = None,
    generate: GenerateConfig | None = None,
    max_observation_chars: int | None = None,
    run_dir: Path | None = None,
    on_event: EventHook | None = None,
) -> AskResult:
    """Ask ``question`` about ``files`` and return the answer with its trajectory.

    ``model`` is a name (``provider:model[@base_url]``) or a :class:`Model`; default the
    configured one, else the embedded ``local:smollm2``. ``mode``/``variant`` go to the agent
    (default: chosen from the model's capabilities); ``tools`` are the tools to offer: names,
    ``module:attr`` or :class:`~omnilab.tools.Tool` objects (default: the agent's set).
    ``max_turns``/``max_tokens``/``max_seconds`` bound the run.
    ``on_event`` sees every event as it is written (live views).

    Raises :class:`~omnilab.errors.OmnilabError` subclasses for user mistakes: a missing file,
    an unknown model, mode or tool; failures during the run end it with status ``error``.
    """
    if not question.strip():
        raise OmnilabError("the question is empty: say what you want to know about the files")
    inputs = InputSet.from_paths(list(files))
    chat_model = _model(model)
    roles = {"perception": _model(perception_model)} if perception_model is not None else {}
    options: dict[str, object] = {}
    if agent == "tir":
        options = {
            "mode": mode,
            "variant": variant,
            "generate": generate or GenerateConfig(),
            "max_observation_chars": max_observation_chars,
        }
    elif mode is not None or variant is not None:
        raise OmnilabError(f"mode and variant are options of the tir agent, not of {agent!r}")
    runner = get_agent(agent, **options)
    budgets = Budgets(
        max_turns=max_turns or get_settings().agents.max_turns,
        max_tokens=max_tokens,
        max_seconds=max_seconds,
    )
    folder = run_dir if run_dir is not None else new_run_dir()
    workspace = folder / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    path = folder / "trajectory.jsonl"
    task = AgentTask(id=f"ask-{uuid.uuid4().hex[:8]}", question=question, inputs=list(inputs))
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=chat_model,
            roles=roles,
            tools=list(tools) if tools is not None else None,
            budgets=budgets,
            workspace=workspace,
            trajectory=writer,
            on_event=on_event,
        )
        try:
            trajectory = await runner.run(task, ctx)
        except AgentConfigError:
            # Refused before its first event: a folder holding an empty trajectory would only
            # be clutter next to the real runs.
            if run_dir is None:
                writer.close()
                shutil.rmtree(folder, ignore_errors=True)
            raise
    return AskResult(
        answer=trajectory.answer,
        status=trajectory.status,
        trajectory=trajectory,
        trajectory_path=path,
        workspace=workspace,
    )


def ask(
    files: Sequence[str | Path],
    question: str,
    *,
    model: str | Model | None = None,
    agent: str = "tir",
    mode: str | None = None,
    variant: str | None = None,
    tools: Sequence[str | Tool] | None = None,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    perception_model: str | Model | None = None,
    generate: GenerateConfig | None = None,
    max_observation_chars: int | None = None,
    run_dir: Path | None = None,
    on_event: EventHook | None = None,
) -> AskResult:
    """:func:`ask_async` for code without an event loop (in one, ``await ask_async(...)``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise OmnilabError("omnilab.ask cannot run inside an event loop; use omnilab.ask_async")
    return asyncio.run(
        ask_async(
            files,
            question,
            model=model,
            agent=agent,
            mode=mode,
            variant=variant,
            tools=tools,
            max_turns=max_turns,
            max_tokens=max_tokens,
            max_seconds=max_seconds,
            perception_model=perception_model,
            generate=generate,
            max_observation_chars=max_observation_chars,
            run_dir=run_dir,
            on_event=on_event,
        )
    )
