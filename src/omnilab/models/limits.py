"""How many calls may be in flight per endpoint, and what limit a run really gets.

Every :class:`~omnilab.models.Model` on one endpoint (base URL, model file) shares one counter
of calls in flight per event loop; each call waits until fewer than *its model's* limit are in
flight, so models with different limits on one endpoint each keep to their own.

A run that asks for ``N`` tasks at once calls :func:`lift_concurrency` with its models by role:
limits that came from the default are raised to at least ``N``; limits the user set (the
``models.concurrency`` setting, or ``get_model(concurrency=...)``) stay, and the returned
:class:`ConcurrencyPlan` says what the run gets and why, in a line for its header.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from omnilab.models.errors import redact

if TYPE_CHECKING:
    from omnilab.models.model import Model

__all__ = [
    "ConcurrencyPlan",
    "EndpointLimit",
    "EndpointPlan",
    "concurrency_plan",
    "endpoint_limit",
    "lift_concurrency",
]


class EndpointLimit:
    """Calls in flight on one endpoint; each caller passes its own limit.

    Waiters are served in arrival order, except that one whose limit is reached is passed over
    for a later one whose larger limit is not. Not thread-safe: one per event loop.
    """

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0
        """The most calls that were in flight at once."""
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        self._largest_waiting = 0

    def hold(self, limit: int) -> _Slot:
        """``async with limit.hold(n):`` waits until fewer than ``n`` calls are in flight and
        counts the block as one of them."""
        return _Slot(self, max(1, limit))

    def _take(self) -> None:
        self.in_flight += 1
        if self.in_flight > self.peak:
            self.peak = self.in_flight

    async def _acquire(self, limit: int) -> None:
        if self.in_flight < limit and not self._waiters:
            self._take()
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (limit, future)
        self._waiters.append(entry)
        self._largest_waiting = max(self._largest_waiting, limit)
        self._wake()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # granted just as the caller gave up: pass the slot on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(entry)
            raise

    def _release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _grant(self, future: asyncio.Future[None]) -> None:
        self._take()
        future.set_result(None)

    def _wake(self) -> None:
        waiters = self._waiters
        # The usual case, one limit for all: grant from the front while there is room, O(1).
        while waiters and self.in_flight < self._largest_waiting:
            limit, future = waiters[0]
            if future.done():  # cancelled while waiting
                waiters.popleft()
            elif self.in_flight < limit:
                waiters.popleft()
                self._grant(future)
            else:
                break
        else:
            if not waiters:
                self._largest_waiting = 0
            return
        # Mixed limits: the first waiter's is reached, a later one's larger limit may not be.
        for entry in list(waiters)[1:]:
            if self.in_flight >= self._largest_waiting:
                break
            limit, future = entry
            if not future.done() and self.in_flight < limit:
                waiters.remove(entry)
                self._grant(future)


class _Slot:
    """The async context manager of :meth:`EndpointLimit.hold` (a class: this runs per call)."""

    __slots__ = ("_limit", "_owner")

    def __init__(self, owner: EndpointLimit, limit: int) -> None:
        self._owner = owner
        self._limit = limit

    async def __aenter__(self) -> None:
        await self._owner._acquire(self._limit)

    async def __aexit__(self, *exc: object) -> None:
        self._owner._release()


# One counter per endpoint and event loop: futures belong to the loop they were made on, and
# separate asyncio.run() calls (the sync API) each bring a new loop.
_LIMITS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointLimit]] = (
    weakref.WeakKeyDictionary()
)


def endpoint_limit(endpoint: str) -> EndpointLimit:
    """The shared counter of ``endpoint`` in the running event loop."""
    per_loop = _LIMITS.setdefault(asyncio.get_running_loop(), {})
    limit = per_loop.get(endpoint)
    if limit is None:
        limit = per_loop[endpoint] = EndpointLimit()
    return limit


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
