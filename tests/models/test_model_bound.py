"""Per-run model views (``Model.bound``) and reply-cache keys that tell samples apart."""

from __future__ import annotations

import asyncio
from pathlib import Path

from omnilab.models import (
    GenerateConfig,
    Message,
    ModelCallEvent,
    ResponseCache,
    get_model,
)
from omnilab.models.cache import request_key
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.providers.scripted import ScriptedAdapter, scripted_model, text

HOT = GenerateConfig(temperature=0.8)


def test_a_view_sends_its_seed_unless_the_call_sets_one() -> None:
    model = scripted_model([text("a"), text("b"), text("c")])
    adapter = model.adapter
    assert isinstance(adapter, ScriptedAdapter)
    view = model.bound(seed=7)
    view.generate_sync("x")
    view.generate_sync("x", config=GenerateConfig(seed=3))
    model.generate_sync("x")
    assert [cfg.seed for _, _, cfg in adapter.requests] == [7, 3, None]
    # A view of a view keeps the seed unless told otherwise.
    assert view.bound(role="judge").seed == 7


def test_a_view_counts_its_own_usage_and_chains_event_sinks() -> None:
    outer: list[ModelCallEvent] = []
    inner: list[ModelCallEvent] = []
    model = scripted_model([text("a"), text("b")], sink=outer.append)
    view = model.bound(role="agent", sink=inner.append)
    view.generate_sync("x")
    assert (view.role, model.role) == ("agent", None)
    assert (view.calls, model.calls) == (1, 0)
    assert len(inner) == 1 and outer == inner
    alone = model.bound(sink=inner.append, inherit_sink=False)
    alone.generate_sync("y")
    assert len(inner) == 2 and len(outer) == 1


def test_views_of_one_model_do_not_share_sinks() -> None:
    model = scripted_model([text("a"), text("b")])
    first: list[ModelCallEvent] = []
    second: list[ModelCallEvent] = []

    async def both() -> None:
        await asyncio.gather(
            model.bound(sink=first.append).generate("one"),
            model.bound(sink=second.append).generate("two"),
        )

    asyncio.run(both())
    assert len(first) == len(second) == 1
    assert first[0].input.last_user_text == "one"
    assert second[0].input.last_user_text == "two"


def test_sample_index_is_part_of_the_cache_key() -> None:
    msgs = [Message.user("Roll a die")]
    first = request_key("m", msgs, [], HOT)
    assert request_key("m", msgs, [], HOT, sample=0) == first
    assert request_key("m", msgs, [], HOT, sample=1) != first
    assert request_key("m", msgs, [], HOT, sample=1) == request_key("m", msgs, [], HOT, sample=1)


def test_every_sampling_setting_is_part_of_the_cache_key() -> None:
    msgs = [Message.user("q")]
    base = GenerateConfig()
    variants = [
        GenerateConfig(temperature=0.5),
        GenerateConfig(top_p=0.9),
        GenerateConfig(max_tokens=5),
        GenerateConfig(stop=["x"]),
        GenerateConfig(seed=1),
        GenerateConfig(tool_choice="none"),
        GenerateConfig(extra_body={"top_k": 5}),
        GenerateConfig(response_format={"type": "object"}),
        GenerateConfig(logprobs=True),
        GenerateConfig(top_logprobs=2),
    ]
    keys = {request_key("m", msgs, [], c) for c in [base, *variants]}
    assert len(keys) == len(variants) + 1
    # The timeout changes no answer.
    assert request_key("m", msgs, [], GenerateConfig(timeout_s=5)) == request_key(
        "m", msgs, [], base
    )


def test_keys_of_requests_without_new_settings_are_unchanged() -> None:
    # Caches written before response_format/logprobs existed still answer: this digest was
    # computed by the key function of that release.
    key = request_key("scripted:inline", [Message.user("hi")], [], GenerateConfig(temperature=0))
    assert key == "00fd0d94d1b0e0ea33339f87f6128e668ef1e26f918d3366b7910f8de502611e"


def test_two_samples_are_two_calls_and_a_rerun_is_none(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.push(reply_text("3"), reply_text("5"))
    cache = ResponseCache(tmp_path / "replies.sqlite3")
    model = get_model(f"vllm:m@{server.base_url}", cache=cache)
    prompt = [Message.user("Roll a die")]
    zero = model.bound(sample=0).generate_sync(prompt, config=HOT)
    one = model.bound(sample=1).generate_sync(prompt, config=HOT)
    assert (zero.text, one.text) == ("3", "5")
    assert len(server.chat_requests) == 2
    # A resumed run (a new Model on the same cache) asks nothing for finished samples.
    again = get_model(f"vllm:m@{server.base_url}", cache=cache)
    rerun = [again.bound(sample=k).generate_sync(prompt, config=HOT) for k in (0, 1, 1)]
    assert [o.text for o in rerun] == ["3", "5", "5"]
    assert all(o.cached for o in rerun)
    assert len(server.chat_requests) == 2


def test_cache_can_be_turned_off_or_on_per_view(server: FakeOpenAIServer, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "replies.sqlite3")
    model = get_model(f"vllm:m@{server.base_url}", cache=cache)
    assert model.cache_enabled
    off = model.bound(cache=False)
    assert not off.cache_enabled
    off.generate_sync("q")
    off.generate_sync("q")
    assert len(server.chat_requests) == 2 and len(cache) == 0
    plain = get_model(f"vllm:m@{server.base_url}", cache=False)
    on = plain.bound(cache=cache)
    on.generate_sync("q")
    on.generate_sync("q")
    assert len(server.chat_requests) == 3 and len(cache) == 1
    # True means the default cache under cache_dir (isolated per test by tests/conftest.py).
    default = plain.bound(cache=True)
    assert default.cache is not None and default.cache.path == ResponseCache.default().path
