"""Per-endpoint concurrency: the shared limit, lifting it for a run, and saying why it binds."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from omnilab.config import get_settings
from omnilab.models import (
    Capabilities,
    GenerateConfig,
    Message,
    Model,
    ModelOutput,
    ToolSpec,
    concurrency_plan,
    get_model,
    lift_concurrency,
)
from omnilab.models.fake_server import FakeOpenAIServer
from omnilab.models.limits import EndpointLimit


class SlowAdapter:
    """Answers after ``delay_s``, counting the calls in flight on it."""

    capabilities = Capabilities()
    secrets: tuple[str, ...] = ()

    def __init__(self, endpoint: str = "slow", delay_s: float = 0.02) -> None:
        self.endpoint = endpoint
        self.delay_s = delay_s
        self.in_flight = 0
        self.peak = 0

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        return ModelOutput.from_text("ok")


def test_calls_on_one_endpoint_share_the_limit() -> None:
    adapter = SlowAdapter()
    first = Model(adapter, name="a", concurrency=3)
    second = Model(adapter, name="b", concurrency=3)

    async def many() -> None:
        await asyncio.gather(*(m.generate("x") for m in (first, second) for _ in range(10)))

    asyncio.run(many())
    assert adapter.peak == 3


def test_each_model_keeps_its_own_limit_on_a_shared_endpoint() -> None:
    small_adapter = SlowAdapter("shared")
    big_adapter = SlowAdapter("shared")
    small = Model(small_adapter, name="small", concurrency=2)
    big = Model(big_adapter, name="big", concurrency=6)

    async def many() -> None:
        calls = [small.generate("x") for _ in range(8)] + [big.generate("x") for _ in range(12)]
        await asyncio.gather(*calls)

    asyncio.run(many())
    # The big model is not held back by the small one's limit, and together they never pass
    # the larger limit; the small one starts only while fewer than 2 are in flight in all.
    assert small_adapter.peak <= 2
    assert big_adapter.peak == 6
    assert small_adapter.peak + big_adapter.peak <= 8


def test_a_cancelled_waiter_gives_its_place_back() -> None:
    async def scenario() -> int:
        limit = EndpointLimit()
        release = asyncio.Event()

        async def hold() -> None:
            async with limit.hold(1):
                await release.wait()

        holder = asyncio.create_task(hold())
        await asyncio.sleep(0)
        waiter = asyncio.create_task(hold())
        await asyncio.sleep(0)
        waiter.cancel()
        release.set()
        await holder
        with pytest.raises(asyncio.CancelledError):
            await waiter
        async with limit.hold(1):
            pass
        return limit.in_flight

    assert asyncio.run(scenario()) == 0


def test_a_run_lifts_the_default_limit_and_keeps_about_n_requests_in_flight() -> None:
    # A long answer time, so all 48 requests overlap even on a loaded machine.
    with FakeOpenAIServer(latency_s=1.0) as server:
        model = get_model(f"vllm:m@{server.base_url}")
        assert (model.concurrency, model.concurrency_source) == (16, None)
        plan = lift_concurrency({"agent": model}, 48)
        assert model.concurrency == 48
        assert (plan.effective, plan.reasons, plan.describe()) == (48, (), "48")

        async def run() -> None:
            views = [model.bound(seed=i) for i in range(48)]
            await asyncio.gather(*(v.generate(f"q{i}") for i, v in enumerate(views)))

        asyncio.run(run())
    assert server.peak_in_flight >= 40


def test_an_explicit_setting_stays_and_the_plan_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_MODELS__CONCURRENCY", "8")
    get_settings.cache_clear()
    model = get_model("vllm:m@http://127.0.0.1:9/v1")
    assert model.concurrency_source == "models.concurrency=8"
    plan = lift_concurrency({"agent": model}, 64)
    assert model.concurrency == 8 and plan.effective == 8
    line = plan.describe()
    assert line.startswith("8 of 64 asked (")
    assert "models.concurrency=8" in line and "http://127.0.0.1:9/v1" in line


def test_a_limit_given_to_get_model_is_explicit() -> None:
    model = get_model("vllm:m@http://127.0.0.1:9/v1", concurrency=4)
    plan = lift_concurrency({"agent": model}, 32)
    assert (model.concurrency, plan.effective) == (4, 4)
    assert "get_model(concurrency=...)" in plan.describe()


def test_roles_sharing_an_endpoint_are_named() -> None:
    agent = get_model("vllm:m@http://127.0.0.1:9/v1")
    judge = get_model("vllm:judge@http://127.0.0.1:9/v1")
    other = get_model("vllm:m@http://127.0.0.1:10/v1")
    plan = lift_concurrency({"agent": agent, "judge": judge, "analyst": other}, 64)
    assert plan.effective == 64
    assert [e.roles for e in plan.endpoints] == [("agent", "judge"), ("analyst",)]
    assert plan.reasons == (
        "roles agent, judge share http://127.0.0.1:9/v1: at most 64 calls in flight between them",
    )


def test_asking_does_not_change_limits() -> None:
    model = get_model("vllm:m@http://127.0.0.1:9/v1")
    plan = concurrency_plan({"agent": model}, 64)
    assert model.concurrency == 16 and plan.effective == 16
    assert "16 of 64 asked" in plan.describe()


def test_a_model_that_runs_one_call_at_a_time_says_so() -> None:
    adapter = SlowAdapter("model.gguf")
    adapter.parallel_calls = 1  # type: ignore[attr-defined]
    plan = lift_concurrency({"agent": Model(adapter, name="local:x")}, 8)
    assert plan.effective == 1
    assert plan.reasons == ("agent: local:x runs 1 call(s) at a time",)
