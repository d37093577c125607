"""How many calls may be in flight per endpoint.

Every :class:`~omnilab.models.Model` on one endpoint (base URL, model file) shares one counter
of calls in flight per event loop; each call waits until fewer than *its model's* limit are in
flight, so models with different limits on one endpoint each keep to their own. What limit a
run really gets is :mod:`omnilab.models.concurrency`.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque

__all__ = ["EndpointLimit", "endpoint_limit"]


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
