"""Retries with exponential backoff and jitter.

Only transient failures are retried (rate limits, server errors, timeouts, lost connections); a
server's ``Retry-After`` replaces the computed delay. A server asking for a longer wait than
``backoff_max_s`` ends the call at once rather than retrying early against its wish.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from omnilab.models.errors import ProviderError

__all__ = ["RetryExhaustedError", "RetryPolicy", "retrying"]

# One generator for every call's jitter: making one per call seeds it from the system each time.
_JITTER = random.Random()  # noqa: S311 - jitter, not cryptography

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a call is retried."""

    max_attempts: int = 4
    backoff_s: float = 1.0
    """Delay before the second attempt; doubles for each one after."""
    backoff_max_s: float = 60.0
    """Longest single wait, Retry-After included."""

    def gives_up(self, attempt: int, error: ProviderError) -> bool:
        """Whether failed attempt number ``attempt`` (1-based) ends the call."""
        if not error.kind.retryable or attempt >= self.max_attempts:
            return True
        return error.retry_after is not None and error.retry_after > self.backoff_max_s

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.backoff_max_s)
        ceiling = min(self.backoff_max_s, self.backoff_s * 2.0 ** (attempt - 1))
        # "Equal jitter": at least half the ceiling, so waits still grow, but clients that failed
        # together do not all come back at the same instant.
        return ceiling / 2 + rng.random() * ceiling / 2


class RetryExhaustedError(Exception):
    """The last failure of a call, after ``attempts`` tries (or a non-retryable first one)."""

    def __init__(self, error: ProviderError, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


OnRetry = Callable[[int, ProviderError, float], None]


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    on_retry: OnRetry | None = None,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """Run ``attempt`` until it succeeds: ``(result, attempts used)``.

    Raises :class:`RetryExhaustedError` with the last
    error once attempts run out or a failure is not worth retrying. ``on_retry(attempt, error,
    delay)`` is told about every retry before its wait.
    """
    rng = rng or _JITTER
    number = 0
    while True:
        number += 1
        try:
            return await attempt(), number
        except ProviderError as e:
            error = e
        if policy.gives_up(number, error):
            if error.kind.retryable and number < policy.max_attempts:
                error = ProviderError(
                    error.kind,
                    f"{error.detail} (the server asks to retry after {error.retry_after:g} s, "
                    "more than models.backoff_max_s)",
                    status=error.status,
                    retry_after=error.retry_after,
                )
            raise RetryExhaustedError(error, number)
        wait = policy.delay(number, error.retry_after, rng)
        if on_retry is not None:
            on_retry(number, error, wait)
        await asyncio.sleep(wait)
