"""Reproduction presets: one switch (``omnilab eval --protocol NAME``) for an authors' setup.

Each preset is a TOML data file in this folder that names its source (the paper and the released
code it follows) and lists every setting it fixes: the agent and its options (prompt variant,
sampling, loop rules), the budgets, the scorer and its rules. ``gaps`` lists what the preset
cannot make omnilab do the authors' way yet, so a number produced under a preset says exactly
how far it is from the published protocol; a gap with a ``reason`` is a named divergence (the
reference cannot run offline, is not published, or omnilab differs by design), one without is
not reproduced yet. Options the user gives on the command line win over
the preset's; the run header and ``run.json`` record the preset and every setting that differs.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnilab.agents.base import Budgets
from omnilab.bench.errors import BenchError
from omnilab.bench.run_dir import MissingMedia
from omnilab.bench.scoring.judging import ScoringRules

__all__ = ["Gap", "Protocol", "differences", "get_protocol", "merge_options", "protocol_names"]


class Gap(BaseModel):
    """One way omnilab still differs from the reference under this preset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    finding: str
    reference: str
    """What the authors' code does."""
    omnilab: str
    """What omnilab does instead."""
    reason: str | None = None
    """Why omnilab keeps this divergence (the reference cannot run offline, is not published,
    or differs by design): a *named* gap. A gap without a reason is not reproduced yet."""

    @property
    def line(self) -> str:
        """The gap in one line, as run headers show it."""
        why = f"; why: {self.reason}" if self.reason else ""
        return f"{self.finding}: {self.omnilab} (reference: {self.reference}{why})"


class Protocol(BaseModel):
    """A reproduction preset (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    title: str
    source: str
    """The paper sections and released files the settings come from."""
    datasets: list[str] = Field(default_factory=list)
    """The datasets the preset is meant for (others get a warning)."""
    agent: str
    agent_options: dict[str, Any] = Field(default_factory=dict)
    budgets: Budgets = Field(default_factory=Budgets)
    scorer: str | None = None
    scoring_rules: ScoringRules | None = None
    task_timeout_s: float | None = None
    """Seconds per task when ``--timeout`` is not given (default: ``bench.task_timeout_s``)."""
    judge: str | None = None
    """The reference's judge model (matched case-blind inside a ``--judge`` name); a run judged
    by another model, or by none, lists it as a difference (the preset cannot pick it: it
    needs an endpoint)."""
    search: str | None = None
    """The reference's web search provider; a run that searches elsewhere lists it as a
    difference (the preset does not pick it: ``--search NAME`` does, with that provider's key)."""
    missing_media: MissingMedia | None = None
    """What the reference does with a task whose media are missing (``drop``: runs it without
    them); a run that does otherwise lists it as a difference."""
    gaps: list[Gap] = Field(default_factory=list)

    @property
    def open_gaps(self) -> list[Gap]:
        """The gaps not reproduced yet (those without a reason)."""
        return [g for g in self.gaps if g.reason is None]

    @property
    def named_gaps(self) -> list[Gap]:
        """The divergences kept with a reason."""
        return [g for g in self.gaps if g.reason is not None]


def _files() -> dict[str, str]:
    folder = resources.files(__name__)
    return {
        entry.name.removesuffix(".toml"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    }


def protocol_names() -> list[str]:
    """The presets that ship with omnilab."""
    return sorted(_files())


@cache
def get_protocol(name: str) -> Protocol:
    """The preset ``name``; a :class:`BenchError` naming the presets when there is none."""
    files = _files()
    if name not in files:
        raise BenchError(
            f"no protocol preset {name!r}; presets: {', '.join(sorted(files))} "
            "(omnilab protocols lists them)"
        )
    try:
        return Protocol.model_validate(tomllib.loads(files[name]))
    except (tomllib.TOMLDecodeError, ValidationError) as e:  # a broken data file is our bug
        raise RuntimeError(f"protocol preset {name} is malformed: {e}") from e


def merge_options(preset: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``preset``'s options with ``given`` on top, nested mappings merged key by key."""
    out = dict(preset)
    for key, value in given.items():
        base = out.get(key)
        if isinstance(base, Mapping) and isinstance(value, Mapping):
            out[key] = merge_options(base, value)
        else:
            out[key] = value
    return out


def _flatten(options: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in options.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat |= _flatten(value, f"{path}.")
        else:
            flat[path] = value
    return flat


def differences(
    protocol: Protocol,
    *,
    dataset: str,
    agent: str,
    agent_options: Mapping[str, Any],
    budgets: Budgets,
    scorer: str,
    scoring_rules: ScoringRules | None,
    search: str | None = None,
    missing_media: MissingMedia = "fail",
    judges: Sequence[str] | None = None,
) -> list[str]:
    """Every setting of a run that is not the preset's, one line each:
    ``agent_options.generate.temperature: 0 (preset 0.6)``."""
    out: list[str] = []
    if protocol.datasets and dataset not in protocol.datasets:
        out.append(f"dataset: {dataset} (preset made for {', '.join(protocol.datasets)})")
    if agent != protocol.agent:
        out.append(f"agent: {agent} (preset {protocol.agent})")
    mine, theirs = _flatten(agent_options), _flatten(protocol.agent_options)
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) != theirs.get(key):
            shown = "unset" if key not in mine else repr(mine[key])
            preset = "unset" if key not in theirs else repr(theirs[key])
            out.append(f"agent_options.{key}: {shown} (preset {preset})")
    for field in type(budgets).model_fields:
        if getattr(budgets, field) != getattr(protocol.budgets, field):
            out.append(
                f"budgets.{field}: {getattr(budgets, field)} "
                f"(preset {getattr(protocol.budgets, field)})"
            )
    if protocol.scorer is not None and scorer != protocol.scorer:
        out.append(f"scorer: {scorer} (preset {protocol.scorer})")
    if scoring_rules != protocol.scoring_rules:
        out.append("scoring_rules: not the preset's")
    if protocol.search is not None:
        from omnilab.config import get_settings

        used = search or get_settings().web.search_provider
        if used != protocol.search:
            out.append(f"search: {used} (preset {protocol.search}: --search {protocol.search})")
    if protocol.missing_media is not None and missing_media != protocol.missing_media:
        out.append(f"missing_media: {missing_media} (preset {protocol.missing_media})")
    if protocol.judge is not None and judges is not None:
        wanted = protocol.judge.casefold()
        others = [j for j in judges if wanted not in j.casefold()] if judges else ["none"]
        out += [f"judge: {j} (preset {protocol.judge}: --judge MODEL serving it)" for j in others]
    return out
