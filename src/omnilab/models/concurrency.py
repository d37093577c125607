"""What concurrency a run really gets from its models' endpoint limits
(:mod:`omnilab.models.limits`).

A run that asks for ``N`` tasks at once calls :func:`lift_concurrency` with its models by role:
limits that came from the default are raised to at least ``N``; limits the user set (the
``models.concurrency`` setting, or ``get_model(concurrency=...)``) stay, and the returned
:class:`ConcurrencyPlan` says what the run gets and why, in a line for its header.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from omnilab.models.errors import redact
from omnilab.models.model import Model

__all__ = ["ConcurrencyPlan", "EndpointPlan", "concurrency_plan", "lift_concurrency"]


@dataclass(frozen=True)
class EndpointPlan:
    """The limit on one endpoint and the roles whose models call it."""

    endpoint: str
    limit: int
    roles: tuple[str, ...]
    source: str | None
    """Where an explicit limit came from (``models.concurrency``, ``get_model(concurrency=...)``);
    ``None`` when it is the default (or was lifted for the run)."""


@dataclass(frozen=True)
class ConcurrencyPlan:
    """What concurrency a run asked for, what it gets, and why it gets less."""

    requested: int
    effective: int
    """Calls of the first role (the agent) that can be in flight at once."""
    endpoints: tuple[EndpointPlan, ...]
    reasons: tuple[str, ...]
    """One phrase per limit that keeps the run below ``requested`` or shares it between roles."""

    def describe(self) -> str:
        """One line for a run header, e.g. ``64`` or ``16 of 64 asked (models.concurrency=16 ...)``."""
        if self.effective >= self.requested and not self.reasons:
            return str(self.requested)
        head = (
            str(self.requested)
            if self.effective >= self.requested
            else f"{self.effective} of {self.requested} asked"
        )
        return f"{head} ({'; '.join(self.reasons)})"


def _display(model: Model) -> str:
    return redact(model.adapter.endpoint, model.adapter.secrets)


def concurrency_plan(models: Mapping[str, Model], requested: int) -> ConcurrencyPlan:
    """The plan for ``models`` by role (the agent's first) at ``requested`` tasks at once,
    without changing any limit."""
    by_endpoint: dict[str, list[tuple[str, Model]]] = {}
    for role, model in models.items():
        by_endpoint.setdefault(model.adapter.endpoint, []).append((role, model))
    plans: list[EndpointPlan] = []
    reasons: list[str] = []
    for members in by_endpoint.values():
        roles = tuple(role for role, _ in members)
        limit = min(model.concurrency for _, model in members)
        sources = [m.concurrency_source for _, m in members if m.concurrency_source]
        source = sources[0] if sources else None
        first = members[0][1]
        plans.append(EndpointPlan(_display(first), limit, roles, source))
        serial = getattr(first.adapter, "parallel_calls", None)
        if isinstance(serial, int) and serial < requested:
            reasons.append(f"{roles[0]}: {first.name} runs {serial} call(s) at a time")
        elif limit < requested:
            why = f"set in {source}" if source else "the default models.concurrency"
            reasons.append(
                f"{', '.join(roles)}: {limit} calls in flight on {plans[-1].endpoint} ({why})"
            )
        if len(roles) > 1:
            reasons.append(
                f"roles {', '.join(roles)} share {plans[-1].endpoint}: "
                f"at most {limit} calls in flight between them"
            )
    effective = requested
    if plans:
        first_model = next(iter(models.values()))
        serial = getattr(first_model.adapter, "parallel_calls", None)
        effective = min(requested, plans[0].limit, serial if isinstance(serial, int) else requested)
    return ConcurrencyPlan(requested, effective, tuple(plans), tuple(reasons))


def lift_concurrency(models: Mapping[str, Model], at_least: int) -> ConcurrencyPlan:
    """Raise every default limit among ``models`` (by role, the agent's first) to ``at_least``
    calls in flight; limits the user set stay. Returns the plan that results.

    Call it before deriving per-task views (:meth:`Model.bound` copies the limit).
    """
    for model in models.values():
        if model.concurrency_source is None and model.concurrency < at_least:
            model.concurrency = at_least
    return concurrency_plan(models, at_least)
