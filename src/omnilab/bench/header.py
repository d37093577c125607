"""The run header: what a run is about to do, printed before it starts and kept in ``run.json``.

A header names the agent and how media reach the model (the mode, and why: an option, or the
model's capability flags and where those flags came from), the tools, the models by role, the
budgets, the dataset and its adapter, the task count, and the limits that decide the speed (task
concurrency, the per-endpoint limit, the reply cache). A model whose flags nobody declared gets a
warning: it runs text-only, and the warning says how to declare its flags.

:func:`run_header` builds one from live objects, so ``omnilab ask`` uses it as well as ``eval``;
:func:`render_header` turns it into lines for a console.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from omnilab.agents.base import Budgets
from omnilab.config import get_settings
from omnilab.models import ConcurrencyPlan, Model, parse_model_name
from omnilab.models.capabilities import FAMILIES
from omnilab.models.errors import ModelConfigError
from omnilab.plural import plural

__all__ = [
    "RunHeader",
    "ask_header",
    "capability_origin",
    "describe_limits",
    "render_header",
    "run_header",
]

_MEDIA_FLAGS = ("image", "audio", "video", "documents")


def describe_limits(plan: ConcurrencyPlan) -> tuple[str, list[str]]:
    """The header's per-endpoint limit line for ``plan`` (the agent's endpoint), and warnings:
    the effective concurrency when a limit keeps the run below what it asked, and roles that
    share an endpoint."""
    if not plan.endpoints:
        return f"{plan.requested} tasks at once", []
    first = plan.endpoints[0]
    if first.source is not None:
        why = f"{first.source}, set explicitly"
    elif first.limit > get_settings().models.concurrency:
        why = "lifted to the task concurrency"
    else:
        why = "models.concurrency default"
    line = f"up to {first.limit} model calls per endpoint ({why})"
    if plan.effective < plan.requested:
        head = f"effective concurrency {plan.effective}, not {plan.requested}"
        return line, [f"{head}: {'; '.join(plan.reasons)}"]
    return line, list(plan.reasons)


class RunHeader(BaseModel):
    """What a run does, in the words the console shows (see the module docstring)."""

    agent: str
    mode: str | None = None
    """How media reach the model (``native``, ``active``, ``tools``, ``evidence``), or a count
    per mode when tasks differ (``native x3, evidence x1``); ``None`` for agents without modes."""
    mode_reason: str | None = None
    capabilities: str = ""
    """The agent model's flags (``text image audio tools``) and where they came from."""
    tools: list[str] | None = None
    """The tools offered; ``None``: the agent's default set for its mode."""
    search: str | None = None
    """The web search provider and who chose it (``serper (--search)``); ``None``: not shown."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model name by role (``agent``, ``judge``, ``perception``, ...), credentials masked."""
    budgets: dict[str, Any] = Field(default_factory=dict)
    dataset: str | None = None
    adapter: str | None = None
    tasks: int | None = None
    samples: int = 1
    concurrency: int | None = None
    """Tasks at once."""
    endpoint_limit: str | None = None
    """The model calls in flight at once per endpoint, and why (lifted, or set explicitly)."""
    cache: bool | None = None
    protocol: str | None = None
    """The reproduction preset (``--protocol``) with its source; ``None``: omnilab's defaults."""
    protocol_differs: list[str] = Field(default_factory=list)
    """Settings of this run that are not the preset's."""
    protocol_gaps: list[str] = Field(default_factory=list)
    """What the preset cannot reproduce yet."""
    protocol_divergences: list[str] = Field(default_factory=list)
    """Where the preset knowingly differs from the reference, each with its reason."""
    warnings: list[str] = Field(default_factory=list)


def capability_origin(name: str) -> tuple[str, bool]:
    """Where the capability flags of model ``name`` come from, and whether any source knows the
    model: ``("models.capabilities 'vllm:*omni*'", True)``, ``("family table '*omni*'", True)``,
    ``("provider scripted defaults", True)``, or ``("no known flags", False)``."""
    try:
        parsed = parse_model_name(name)
    except ModelConfigError:
        return "no known flags", False
    full, model_id = f"{parsed.provider}:{parsed.model}", parsed.model
    overrides = get_settings().models.capabilities
    declared = [p for p in overrides if fnmatchcase(full, p) or fnmatchcase(model_id, p)]
    if declared:
        return f"models.capabilities {', '.join(map(repr, declared))}", True
    from omnilab.models.registry import PROVIDERS
    from omnilab.registry import RegistryError

    # The one provider looked up, not all of them: listing them all reads every installed
    # package's entry points (11-19 ms of each run's start).
    try:
        provider = PROVIDERS.get(parsed.provider)
    except RegistryError:
        provider = None  # a plugin that cannot load: naming it as a model gives its error
    if provider is not None and provider.fixed_flags:
        return f"provider {parsed.provider}: its runtime fixes them", True
    family = [p for p, _ in FAMILIES if fnmatchcase(model_id.lower(), p)]
    if family:
        return f"family table {', '.join(map(repr, family))}", True
    if provider is not None and any(getattr(provider.capabilities, f) for f in _MEDIA_FLAGS):
        return f"provider {parsed.provider} defaults", True
    return "no known flags", False


def _task_modes(model: Model, task_files: Iterable[Sequence[Any]]) -> Counter[str]:
    """The mode ``tir`` picks by default for each task's inputs."""
    from omnilab.agents.views import default_mode
    from omnilab.inputs import InputSet

    modes: Counter[str] = Counter()
    for files in task_files:
        try:
            inputs = InputSet(list(files))
        except ValueError:
            continue  # duplicate ids: the agent reports it on that task
        modes[default_mode(inputs, model.capabilities)] += 1
    return modes


def run_header(
    *,
    agent: str,
    model: Model,
    agent_options: Mapping[str, Any] | None = None,
    roles: Mapping[str, str] | None = None,
    tools: Sequence[str] | None = None,
    budgets: Budgets | None = None,
    task_files: Iterable[Sequence[Any]] = (),
    dataset: str | None = None,
    adapter: str | None = None,
    tasks: int | None = None,
    samples: int = 1,
    concurrency: int | None = None,
    endpoint_limit: str | None = None,
    cache: bool | None = None,
    warnings: Sequence[str] = (),
) -> RunHeader:
    """The header of a run of ``agent`` with ``model``; ``task_files`` (each task's input files)
    decide the default mode of agents that pick one from the capability flags (``tir``)."""
    options = dict(agent_options or {})
    origin, known = capability_origin(model.name)
    notes = list(warnings)
    mode: str | None = None
    reason: str | None = None
    if options.get("mode"):
        mode, reason = str(options["mode"]), "set by the agent option mode"
    elif agent == "tir":
        counts = _task_modes(model, task_files)
        if counts:
            mode = ", ".join(f"{m} x{n}" for m, n in counts.most_common())
            if len(counts) == 1:
                mode = next(iter(counts))
        reason = "picked from the model's capability flags"
    if not known:
        # Only tir has an evidence mode; other agents just send such a model no media (master
        # refuses it a media role, ota describes its media in text).
        effect = (
            "it runs text-only (evidence mode: media become text evidence)"
            if agent == "tir"
            else f"the {agent} agent treats it as text-only (no media reach it)"
        )
        notes.append(
            f"{model.name} has no known capability flags: {effect}. "
            "If it takes media, declare its flags in omnilab.toml, "
            f'e.g. [models.capabilities] "{model.name.split("@")[0]}" = {{image = true, '
            "audio = true, video = true}"
            # only tir has a mode option to force
            + (", or pass --agent-option mode=..." if agent == "tir" else "")
        )
    return RunHeader(
        agent=agent,
        mode=mode,
        mode_reason=reason,
        capabilities=f"{model.capabilities.describe()} ({origin})",
        tools=list(tools) if tools is not None else None,
        models={"agent": model.name, **dict(roles or {})},
        budgets=budgets.model_dump(exclude_defaults=True) if budgets is not None else {},
        dataset=dataset,
        adapter=adapter,
        tasks=tasks,
        samples=samples,
        concurrency=concurrency,
        endpoint_limit=endpoint_limit,
        cache=cache,
        warnings=notes,
    )


def render_header(header: RunHeader) -> list[str]:
    """The header as console lines (plain text; warnings start with ``warning:``)."""
    lines = [f"agent {header.agent}"]
    if header.mode is not None:
        why = f" ({header.mode_reason})" if header.mode_reason else ""
        lines[0] += f", mode {header.mode}{why}"
    lines.append(f"model flags: {header.capabilities}")
    lines.append("models: " + ", ".join(f"{r}={m}" for r, m in header.models.items()))
    tools = ", ".join(header.tools) if header.tools is not None else "the agent's default set"
    lines.append(f"tools: {tools}")
    if header.search is not None:
        lines.append(f"web search: {header.search}")
    budgets = ", ".join(f"{k}={v}" for k, v in header.budgets.items()) or "defaults"
    lines.append(f"budgets: {budgets}")
    if header.dataset is not None:
        where = f" (adapter {header.adapter})" if header.adapter else ""
        count = f", {plural(header.tasks, 'task')}" if header.tasks is not None else ""
        samples = f" x {header.samples} samples" if header.samples > 1 else ""
        lines.append(f"dataset {header.dataset}{where}{count}{samples}")
    speed: list[str] = []
    if header.concurrency is not None:
        speed.append(f"{header.concurrency} tasks at once")
    if header.endpoint_limit is not None:
        speed.append(header.endpoint_limit)
    if header.cache is not None:
        speed.append(
            "reply cache on (finished calls are reused)" if header.cache else "reply cache off"
        )
    if speed:
        lines.append("; ".join(speed))
    if header.dataset is not None:
        lines.append(
            f"protocol: {header.protocol}"
            if header.protocol
            else "protocol: none (omnilab's defaults; not a reproduction preset)"
        )
        lines.extend(f"  differs from the preset: {d}" for d in header.protocol_differs)
        lines.extend(f"  not reproduced yet: {g}" for g in header.protocol_gaps)
        lines.extend(f"  differs, with a reason: {g}" for g in header.protocol_divergences)
    lines.extend(f"warning: {w}" for w in header.warnings)
    return lines


def ask_header(
    files: Sequence[str | Path],
    *,
    agent: str = "tir",
    model: str | None = None,
    mode: str | None = None,
    tools: Sequence[str] | None = None,
    budgets: Mapping[str, Any] | None = None,
    roles: Mapping[str, str] | None = None,
    warnings: Sequence[str] = (),
) -> RunHeader:
    """The header of ``omnilab ask`` with ``agent`` on ``files`` (the model named, else the
    default one; ``roles`` are the further models by role; ``warnings`` go first)."""
    from omnilab.inputs import InputSet
    from omnilab.models import get_model

    given = {k: v for k, v in (budgets or {}).items() if v is not None}
    return run_header(
        agent=agent,
        model=get_model(model),
        agent_options={"mode": mode} if mode else None,
        roles=roles,
        tools=tools,
        budgets=Budgets(**given),
        task_files=[list(InputSet.from_paths(files))],
        warnings=warnings,
    )
