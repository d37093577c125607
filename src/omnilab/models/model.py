"""The user-facing :class:`Model`: retries, timeouts, cache, limits, usage totals and events.

It wraps one provider adapter. Adapters only translate; everything that should behave the same
for every provider lives here.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Sequence

from omnilab.models.adapter import ProviderAdapter
from omnilab.models.cache import ResponseCache, request_key
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ModelError, ProviderError, redact
from omnilab.models.events import CallInput, EventSink, ModelCallEvent, summarize_input
from omnilab.models.parsing import postprocess
from omnilab.models.retry import RetryExhaustedError, RetryPolicy, retrying
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage

__all__ = ["Model"]

log = logging.getLogger(__name__)

# One semaphore per endpoint and event loop: asyncio primitives belong to the loop they first
# wait on, and separate asyncio.run() calls (the sync API) each bring a new loop.
_LIMITS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _endpoint_limit(endpoint: str, size: int) -> asyncio.Semaphore:
    per_loop = _LIMITS.setdefault(asyncio.get_running_loop(), {})
    if endpoint not in per_loop:
        per_loop[endpoint] = asyncio.Semaphore(size)
    return per_loop[endpoint]


class Model:
    """A model ready to call: ``await model.generate(messages, tools=..., config=...)``.

    Usually made by :func:`omnilab.models.get_model` from a name like ``vllm:qwen@http://h/v1``.
    ``usage`` totals what was billed: each call counts once however many attempts it took, and
    cache hits count nothing.
    """

    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        name: str,
        cache: ResponseCache | None = None,
        retry: RetryPolicy | None = None,
        timeout_s: float = 120.0,
        concurrency: int = 16,
        sink: EventSink | None = None,
    ) -> None:
        self.adapter = adapter
        self.name = name
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        self.sink = sink
        self.usage = Usage()
        self.calls = 0
        """Calls answered by the provider (cache hits and failures excluded)."""
        self.cache_hits = 0

    def __repr__(self) -> str:
        return f"Model({self.name!r})"

    @property
    def capabilities(self) -> Capabilities:
        """What the model accepts natively."""
        return self.adapter.capabilities

    async def generate(
        self,
        messages: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        """One call: the model's answer to ``messages`` (a string is one user message).

        Raises :class:`~omnilab.models.errors.ModelError` once retries are spent or on an error
        that retrying cannot fix.
        """
        msgs = [Message.user(messages)] if isinstance(messages, str) else list(messages)
        tool_list = list(tools or [])
        cfg = config or GenerateConfig()
        started = time.perf_counter()
        key = request_key(self.name, msgs, tool_list, cfg) if self.cache is not None else None
        if self.cache is not None and key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.cache_hits += 1
                output = hit.model_copy(update={"cached": True, "latency_s": 0.0})
                self._emit(msgs, tool_list, cfg, started, 0, output=output)
                return output
        timeout = cfg.timeout_s or self.timeout_s
        attempt_latency = 0.0

        async def attempt() -> ModelOutput:
            nonlocal attempt_latency
            async with _endpoint_limit(self.adapter.endpoint, self.concurrency):
                t0 = time.perf_counter()
                try:
                    result = await asyncio.wait_for(
                        self.adapter.generate(msgs, tool_list, cfg), timeout=timeout
                    )
                except TimeoutError:
                    raise ProviderError(
                        ErrorKind.TIMEOUT, f"no answer within {timeout:g} s"
                    ) from None
                attempt_latency = time.perf_counter() - t0
                return result

        try:
            raw, attempts = await retrying(attempt, self.retry, on_retry=self._log_retry)
        except RetryExhaustedError as e:
            error = ModelError(
                self.name,
                self._redact(str(e.error)),
                kind=e.error.kind,
                status=e.error.status,
                attempts=e.attempts,
            )
            self._emit(
                msgs, tool_list, cfg, started, e.attempts, error=str(error), kind=e.error.kind
            )
            raise error from None
        # With tool_choice "none" a call written as text is an answer, not a call to recover.
        offered = [] if cfg.tool_choice == "none" else tool_list
        output = postprocess(raw, offered).model_copy(update={"latency_s": attempt_latency})
        self.calls += 1
        self.usage = self.usage + output.usage
        if self.cache is not None and key is not None:
            self.cache.put(key, self.name, output)
        self._emit(msgs, tool_list, cfg, started, attempts, output=output)
        return output

    def generate_sync(
        self,
        messages: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        """:meth:`generate` for code without an event loop (not callable inside one)."""
        return asyncio.run(self.generate(messages, tools=tools, config=config))

    def _redact(self, text: str) -> str:
        return redact(text, self.adapter.secrets)

    def _log_retry(self, attempt: int, error: ProviderError, wait: float) -> None:
        detail = self._redact(str(error))
        log.info(
            "model %s: attempt %d failed (%s); retrying in %.2f s", self.name, attempt, detail, wait
        )

    def _emit(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: GenerateConfig,
        started: float,
        attempts: int,
        *,
        output: ModelOutput | None = None,
        error: str | None = None,
        kind: str | None = None,
    ) -> None:
        if self.sink is None:
            return
        event = ModelCallEvent(
            model=self.name,
            input=summarize_input(messages, tools),
            # Already typed: constructed without validating every message again.
            sent=CallInput.model_construct(
                messages=list(messages), tools=list(tools), config=config, media={}
            ),
            output=output,
            usage=output.usage if output is not None else Usage(),
            latency_s=time.perf_counter() - started,
            attempts=attempts,
            cached=output.cached if output is not None else False,
            error=error,
            error_kind=kind,
        )
        self.sink(event)
