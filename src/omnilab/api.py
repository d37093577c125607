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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnilab._ownfolders import new_folder, private_folder
from omnilab._private_paths import add_private_paths
from omnilab.agents.base import (
    Agent,
    AgentConfigError,
    AgentContext,
    AgentTask,
    Budgets,
    EventHook,
)
from omnilab.agents.registry import get_agent, with_search_option
from omnilab.config import get_settings
from omnilab.errors import OmnilabError
from omnilab.inputs import InputSet
from omnilab.models.model import Model
from omnilab.models.registry import get_model
from omnilab.models.types import GenerateConfig
from omnilab.tools.base import Tool
from omnilab.tools.search_choice import check_search, use_search
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


def new_run_dir(root: str | Path | None = None) -> Path:
    """A fresh folder (0700) under ``root`` (default ``agents.runs_dir``) named
    ``<time>-<id>``; :class:`~omnilab._ownfolders.UnsafeFolderError` (one line) when ``root`` is a
    link or another user's folder."""
    given = root is not None
    base = Path(root) if root is not None else get_settings().agents.runs_dir
    base = private_folder(base, what="runs folder" if given else "agents.runs_dir")
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return new_folder(base, f"{stamp}-{uuid.uuid4().hex[:6]}")


def _model(model: str | Model | None) -> Model:
    return model if isinstance(model, Model) else get_model(model)


def _options(given: Mapping[str, Any] | None, shortcuts: Mapping[str, Any]) -> dict[str, Any]:
    options = dict(given or {})
    for key, value in shortcuts.items():
        if value is None:
            continue
        if key in options and options[key] != value:
            raise OmnilabError(f"{key} is given twice (as an argument and in agent_options)")
        options[key] = value
    return options


def _agent(name: str, options: Mapping[str, Any]) -> Agent:
    try:
        return get_agent(name, **options)
    except TypeError as e:
        # A plain constructor refusing a keyword: the user named an option this agent lacks.
        given = ", ".join(sorted(options)) or "none"
        raise AgentConfigError(
            f"agent {name!r} does not take these options ({given}): {e}"
        ) from None


async def ask_async(
    files: Sequence[str | Path],
    question: str,
    *,
    model: str | Model | None = None,
    agent: str = "tir",
    agent_options: Mapping[str, Any] | None = None,
    roles: Mapping[str, str | Model] | None = None,
    tools: Sequence[str | Tool] | None = None,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    mode: str | None = None,
    variant: str | None = None,
    perception_model: str | Model | None = None,
    generate: GenerateConfig | None = None,
    max_observation_chars: int | None = None,
    run_dir: str | Path | None = None,
    on_event: EventHook | None = None,
    search: str | None = None,
    allow_unreadable: bool = False,
) -> AskResult:
    """Ask ``question`` about ``files`` with agent ``agent`` and return the answer with its
    trajectory.

    ``model`` is the agent's model, a name (``provider:model[@base_url]``) or a :class:`Model`;
    default the configured one, else the embedded ``local:smollm2``. ``roles`` binds more models
    by role (e.g. ``{"perception": "openai:gpt-4o"}``; ``perception_model`` is a shortcut for
    that one). ``agent_options`` go to the agent's constructor (``get_agent(agent, **options)``);
    ``mode``, ``variant``, ``generate`` and ``max_observation_chars`` are shortcuts for the
    options of that name (the ``tir`` agent has them). ``tools`` are the tools to
    offer: names, ``module:attr`` or :class:`~omnilab.tools.Tool` objects (default: the agent's set); ``max_turns``/``max_tokens``/``max_seconds`` bound the run.
    ``on_event`` sees every event as it is written (live views). ``search`` picks the provider
    of ``web_search`` (``serper``, ``brave``, ``tavily``, ``searxng``, ``local``; default the
    setting ``web.search_provider``). A video, audio or image input that does not decode is
    refused (:class:`~omnilab.inputs.InputUnreadableError`) unless ``allow_unreadable``; the
    agent then sees it listed as unreadable.

    Raises :class:`~omnilab.errors.OmnilabError` subclasses for user mistakes: a missing or
    undecodable file, an unknown model, agent, option or tool; failures during the run end it with status
    ``error``.
    """
    if not question.strip():
        raise OmnilabError("the question is empty: say what you want to know about the files")
    if search is not None:
        check_search(search)
    inputs = InputSet.from_paths(list(files))
    inputs.check_readable(allow=allow_unreadable)
    options = _options(
        agent_options,
        {
            "mode": mode,
            "variant": variant,
            "generate": generate,
            "max_observation_chars": max_observation_chars,
        },
    )
    if search is not None:
        # An agent with its own provider option (deepsearch) searches where --search says too.
        options = dict(with_search_option(agent, options, search))
    runner = _agent(agent, options)
    chat_model = _model(model)
    named: dict[str, str | Model] = {**get_settings().agents.roles, **(roles or {})}
    bound_roles = {role: _model(m) for role, m in named.items()}
    if perception_model is not None:
        bound_roles["perception"] = _model(perception_model)
    budgets = Budgets(
        max_turns=max_turns or get_settings().agents.max_turns,
        max_tokens=max_tokens,
        max_seconds=max_seconds,
    )
    folder = private_folder(run_dir, what="run_dir") if run_dir is not None else new_run_dir()
    workspace = folder / "workspace"
    workspace.mkdir(exist_ok=True)
    # This run's folder and the runs beside it: hidden from its sandboxes wherever they lie.
    add_private_paths(folder, folder.parent)
    path = folder / "trajectory.jsonl"
    task = AgentTask(id=f"ask-{uuid.uuid4().hex[:8]}", question=question, inputs=list(inputs))
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=chat_model,
            roles=bound_roles,
            tools=list(tools) if tools is not None else None,
            budgets=budgets,
            workspace=workspace,
            trajectory=writer,
            on_event=on_event,
        )
        try:
            with use_search(search):
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
    agent_options: Mapping[str, Any] | None = None,
    roles: Mapping[str, str | Model] | None = None,
    tools: Sequence[str | Tool] | None = None,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    mode: str | None = None,
    variant: str | None = None,
    perception_model: str | Model | None = None,
    generate: GenerateConfig | None = None,
    max_observation_chars: int | None = None,
    run_dir: str | Path | None = None,
    on_event: EventHook | None = None,
    search: str | None = None,
    allow_unreadable: bool = False,
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
            agent_options=agent_options,
            roles=roles,
            tools=tools,
            max_turns=max_turns,
            max_tokens=max_tokens,
            max_seconds=max_seconds,
            mode=mode,
            variant=variant,
            perception_model=perception_model,
            generate=generate,
            max_observation_chars=max_observation_chars,
            run_dir=run_dir,
            on_event=on_event,
            search=search,
            allow_unreadable=allow_unreadable,
        )
    )
