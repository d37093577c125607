"""The user-facing :class:`Model`: retries, timeouts, cache, limits, usage totals and events.

It wraps one provider adapter. Adapters only translate; everything that should behave the same
for every provider lives here.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Sequence

from omnilab.models.adapter import ProviderAdapter
from omnilab.models.cache import ResponseCache, request_key
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ModelError, ProviderError, redact
from omnilab.models.events import CallInput, EventSink, ModelCallEvent, summarize_input
from omnilab.models.limits import endpoint_limit
from omnilab.models.parsing import postprocess
from omnilab.models.retry import RetryExhaustedError, RetryPolicy, retrying
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage

__all__ = ["Model"]

log = logging.getLogger(__name__)


def _chain(first: EventSink, then: EventSink) -> EventSink:
    def sink(event: ModelCallEvent) -> None:
        first(event)
        then(event)

    return sink


class Model:
    """A model ready to call: ``await model.generate(messages, tools=..., config=...)``.

    Usually made by :func:`omnilab.models.get_model` from a name like ``vllm:qwen@http://h/v1``.
    ``usage`` totals what was billed: each call counts once however many attempts it took, and
    cache hits count nothing. :meth:`bound` derives a view for one run (role, event sink, seed,
    sample index) that shares the adapter, cache, retries and endpoint limit.
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
        concurrency_source: str | None = None,
        sink: EventSink | None = None,
        role: str | None = None,
        seed: int | None = None,
        sample: int | None = None,
    ) -> None:
        self.adapter = adapter
        self.name = name
        self.cache = cache
        """The response cache; ``None`` when caching is off."""
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        """Most calls in flight on this model's endpoint (shared with other models there)."""
        self.concurrency_source = concurrency_source
        """Where an explicitly set ``concurrency`` came from; ``None`` for the default, which
        :func:`~omnilab.models.concurrency.lift_concurrency` may raise for a run."""
        self.sink = sink
        self.role = role
        """The role this view was bound to (``agent``, ``judge``, ...), if any."""
        self.seed = seed
        """The seed sent when a call's config sets none."""
        self.sample = sample
        """The index of the repeated sample this view makes (part of the cache key)."""
        self.usage = Usage()
        self.calls = 0
        """Calls answered by the provider (cache hits and failures excluded)."""
        self.cache_hits = 0

    def bound(
        self,
        *,
        role: str | None = None,
        sink: EventSink | None = None,
        inherit_sink: bool = True,
        seed: int | None = None,
        sample: int | None = None,
        cache: bool | ResponseCache | None = None,
    ) -> Model:
        """A view of this model for one run, task or sample: the same adapter, retries,
        timeout, endpoint limit and (unless ``cache`` says otherwise) response cache, with its
        own usage totals.

        Args:
            role: the role the view plays (kept as ``role``); unset keeps this model's.
            sink: receives each call's event first; the sink of this model still receives it
                unless ``inherit_sink`` is false.
            inherit_sink: whether events also go to this model's sink.
            seed: sent with every call whose config sets no seed; unset keeps this model's.
            sample: the index of a repeated sample. It is part of the response-cache key, so
                samples 0, 1, 2 of one prompt are separate calls while a rerun of sample 1 is
                served from the cache. Unset keeps this model's.
            cache: ``False`` turns caching off for the view, ``True`` uses the default cache
                (``cache_dir/models``), a :class:`ResponseCache` uses that one; unset keeps
                this model's.
        """
        view = copy.copy(self)
        view.usage = Usage()
        view.calls = 0
        view.cache_hits = 0
        if role is not None:
            view.role = role
        if seed is not None:
            view.seed = seed
        if sample is not None:
            view.sample = sample
        if sink is not None:
            view.sink = _chain(sink, self.sink) if inherit_sink and self.sink else sink
        elif not inherit_sink:
            view.sink = None
        if cache is not None:
            view.cache = _resolve_cache(cache)
        return view

    def __repr__(self) -> str:
        role = f", role={self.role!r}" if self.role else ""
        return f"Model({self.name!r}{role})"

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
        if cfg.seed is None and self.seed is not None and cfg.send_seed:
            cfg = cfg.model_copy(update={"seed": self.seed})
        started = time.perf_counter()
        key = (
            request_key(self.name, msgs, tool_list, cfg, sample=self.sample)
            if self.cache is not None
            else None
        )
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
            async with endpoint_limit(self.adapter.endpoint).hold(self.concurrency):
                t0 = time.perf_counter()
                try:
                    # A timeout scope, not wait_for: wait_for ran each call in a task of its own.
                    async with asyncio.timeout(timeout):
                        result = await self.adapter.generate(msgs, tool_list, cfg)
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
                advice=e.error.advice,
                sent=e.error.sent,
            )
            self._emit(
                msgs, tool_list, cfg, started, e.attempts, error=str(error), kind=e.error.kind
            )
            raise error from None
        # With tool_choice "none" a call written as text is an answer, not a call to recover.
        offered = [] if cfg.tool_choice == "none" else tool_list
        output = postprocess(raw, offered, keep_think=cfg.keep_think).model_copy(
            update={"latency_s": attempt_latency}
        )
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

    @property
    def cache_enabled(self) -> bool:
        """Whether replies are kept in (and served from) a response cache."""
        return self.cache is not None

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


def _resolve_cache(cache: bool | ResponseCache) -> ResponseCache | None:
    if isinstance(cache, ResponseCache):
        return cache
    return ResponseCache.default() if cache else None
