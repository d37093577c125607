"""A run as someone asks for it, and the configuration it gets.

A :class:`RunRequest` holds what was given (every option ``None`` or empty when not);
:func:`request_config` fills the rest: the resumed run's value (its ``run.json``, from
:func:`resumed_config`), else the reproduction preset's, else the settings' or omnilab's
default. ``omnilab eval`` parses its options into a request; the Python API uses the same::

    stored = resumed_config(out, resume=True)
    config = request_config(RunRequest(concurrency=8), stored)
    plan = plan_run(config, out, resume=True)

:func:`default_run_dir` names a new run's folder and :func:`preview_prompt` renders the first
prompt of a run without calling a model (``omnilab eval --show-prompt``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from omnilab.agents.base import Budgets
from omnilab.bench.errors import BenchError
from omnilab.bench.protocols import get_protocol
from omnilab.bench.run_dir import MissingMedia, RunConfig, RunDir, Selection
from omnilab.bench.runner import new_config
from omnilab.config import get_settings
from omnilab.models import default_model_name

__all__ = ["RunRequest", "default_run_dir", "preview_prompt", "request_config", "resumed_config"]


@dataclass(frozen=True)
class RunRequest:
    """The options of a run as given; ``None`` (or empty) where they were not."""

    dataset: str | None = None
    data: str | Path | None = None
    """The dataset file: a path or a URL (``s3://``, ``https://``, ...)."""
    media_root: str | Path | None = None
    """The media folder: a path or a URL."""
    agent: str | None = None
    protocol: str | None = None
    agent_options: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    roles: Mapping[str, str] = field(default_factory=dict)
    """Further models by role; a new run adds the configured ``agents.roles`` under these."""
    tools: list[str] | None = None
    search: str | None = None
    missing_media: str | None = None
    """``fail`` or ``drop``."""
    allow_outside_media_root: bool | None = None
    """Take the dataset's absolute and ``..`` media paths as written (see ``load_dataset``)."""
    judges: list[str] = field(default_factory=list)
    scorer: str | None = None
    concurrency: int | None = None
    task_timeout_s: float | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None
    seed: int | None = None
    levels: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    limit: int | None = None
    backend: str | None = None
    samples: int | None = None
    cache: bool | None = None
    preview: bool = False
    """Only to show a prompt: nothing is scored, so a judged scorer needs no judge."""


def resumed_config(
    out: Path | None, *, resume: bool, retry_failed: bool = False
) -> RunConfig | None:
    """The stored configuration of the run in ``out`` when resuming it (``None`` for a new run,
    or a folder that holds no run yet)."""
    if resume and out is None:
        raise BenchError("--resume needs --out DIR, the run folder to continue")
    if retry_failed and not resume:
        raise BenchError("--retry-failed needs --resume")
    return RunDir(out).read_config() if resume and out and RunDir(out).is_run() else None


def _pick(given: Any, stored: RunConfig | None, name: str, default: Any) -> Any:
    """An option's value: what was given, else the resumed run's, else the default."""
    if given is not None:
        return given
    if stored is not None:
        return getattr(stored, name)
    return default


def _selection(stored: RunConfig | None, **given: Any) -> Selection:
    base = stored.selection if stored is not None else Selection()
    update = {k: v for k, v in given.items() if v not in (None, [])}
    return base.model_copy(update=update)


def _budgets(stored: RunConfig | None, **given: Any) -> Budgets:
    base = stored.budgets if stored is not None else Budgets()
    return base.model_copy(update={k: v for k, v in given.items() if v is not None})


def _missing_media(value: str | None) -> MissingMedia | None:
    if value is None:
        return None
    if value not in ("fail", "drop"):
        raise BenchError(f"--missing-media is fail or drop, not {value!r}")
    return "fail" if value == "fail" else "drop"


def request_config(request: RunRequest, stored: RunConfig | None = None) -> RunConfig:
    """The configuration of the run ``request`` asks for, resuming ``stored`` if given (see the
    module docstring for which value wins)."""
    r = request
    settings = get_settings().bench
    name = _pick(r.dataset, stored, "dataset", None)
    if name is None:
        raise BenchError("name the dataset and its file: omnilab eval DATASET --data PATH")
    protocol = _pick(r.protocol, stored, "protocol", None)
    preset = get_protocol(protocol) if protocol else None
    timeout_default = (preset and preset.task_timeout_s) or settings.task_timeout_s
    roles = dict(r.roles)
    if stored is None:  # a new run: the configured roles, the given ones winning
        roles = {**get_settings().agents.roles, **roles}
    budgets_given = r.max_turns or r.max_tokens or r.max_seconds
    return new_config(
        name,
        _pick(r.data, stored, "data_url" if stored and stored.data_url else "data", None),
        agent=_pick(r.agent, stored, "agent", preset.agent if preset else "tir"),
        model=_pick(r.model, stored, "model", None) or default_model_name(),
        media_root=_pick(
            r.media_root, stored, "media_url" if stored and stored.media_url else "media_root", None
        ),
        agent_options=_pick(dict(r.agent_options) or None, stored, "agent_options", {}),
        roles=_pick(roles or None, stored, "roles", {}),
        tools=_pick(r.tools, stored, "tools", None),
        budgets=_budgets(
            stored, max_turns=r.max_turns, max_tokens=r.max_tokens, max_seconds=r.max_seconds
        )
        if stored is not None or budgets_given
        else None,
        task_timeout_s=_pick(r.task_timeout_s, stored, "task_timeout_s", timeout_default),
        scorer=_pick(r.scorer, stored, "scorer", None),
        judges=_pick(r.judges or None, stored, "judges", []),
        seed=_pick(r.seed, stored, "seed", 0),
        selection=_selection(
            stored, levels=r.levels, categories=r.categories, ids=r.ids, limit=r.limit
        ),
        backend=_pick(r.backend, stored, "backend", "local"),
        concurrency=_pick(r.concurrency, stored, "concurrency", settings.concurrency),
        samples=_pick(r.samples, stored, "samples", 1),
        cache=_pick(r.cache, stored, "cache", True),
        protocol=protocol,
        preview=r.preview,
        search=_pick(r.search, stored, "search", None),
        missing_media=_pick(_missing_media(r.missing_media), stored, "missing_media", None),
        allow_outside_media_root=_pick(
            r.allow_outside_media_root, stored, "allow_outside_media_root", False
        ),
    )


def default_run_dir(config: RunConfig) -> Path:
    """A new run's folder: ``bench.runs_dir/DATASET-AGENT-TIME``."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return get_settings().bench.runs_dir / f"{config.dataset}-{config.agent}-{stamp}"


def preview_prompt(config: RunConfig) -> str:
    """The first prompt of the run's first selected task, rendered for a terminal, without
    calling the model or writing a run folder."""
    # Imported here: the dataset adapters, the executor and the scorers are for this option
    # only, and `omnilab eval` imports this module on every start.
    from omnilab.bench.datasets import load_dataset
    from omnilab.bench.empty_selection import empty_selection_error
    from omnilab.bench.preview import first_prompt, render_prompt
    from omnilab.bench.remote_stage import stage_task
    from omnilab.bench.runner import Components, build_executor
    from omnilab.bench.scoring import AnswerSetMatch

    loaded = load_dataset(
        config.dataset,
        config.data,
        media_root=config.media_url or config.media_root,
        allow_outside_media_root=config.allow_outside_media_root,
    )
    tasks = config.selection.apply(loaded.tasks)
    if not tasks:
        raise empty_selection_error(loaded, config.selection)
    # Nothing is scored here: a stand-in scorer, so a judged scorer needs no judge to preview.
    executor = build_executor(config, Components(scorer=AnswerSetMatch()))
    # Inputs at URLs are fetched here, as the task would fetch them where it runs.
    prompt = asyncio.run(first_prompt(executor, stage_task(tasks[0])))
    return render_prompt(prompt)
