"""The Model wrapper over the scripted provider: retries, timeouts, cache, usage, events, limits."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from omnilab.content import Image
from omnilab.models import (
    Capabilities,
    ErrorKind,
    GenerateConfig,
    Message,
    Model,
    ModelCallEvent,
    ModelError,
    ModelOutput,
    ProviderError,
    ResponseCache,
    RetryPolicy,
    ToolSpec,
    Usage,
)
from omnilab.models.providers import scripted
from omnilab.models.providers.scripted import ScriptedAdapter, scripted_model

QUICK = RetryPolicy(max_attempts=3, backoff_s=0.001, backoff_max_s=0.01)
U = Usage(prompt_tokens=100, completion_tokens=20)
SEARCH = ToolSpec(
    name="search", parameters={"type": "object", "properties": {"q": {"type": "string"}}}
)


def test_retries_transient_errors_and_bills_the_call_once() -> None:
    events: list[ModelCallEvent] = []
    model = scripted_model(
        [scripted.error(429, times=1), scripted.error(503), scripted.text("fine", usage=U)],
        retry=QUICK,
        sink=events.append,
    )
    out = model.generate_sync("hi")
    assert out.text == "fine"
    assert model.usage == U
    assert model.calls == 1
    (event,) = events
    assert (event.attempts, event.error, event.usage) == (3, None, U)
    assert event.output is not None and event.output.text == "fine"


def test_gives_up_after_max_attempts_with_one_line() -> None:
    events: list[ModelCallEvent] = []
    model = scripted_model([scripted.error(500, times=5)], retry=QUICK, sink=events.append)
    with pytest.raises(ModelError) as err:
        model.generate_sync("hi")
    message = str(err.value)
    assert message.startswith("model scripted:inline: HTTP 500: scripted error after 3 attempts;")
    assert "\n" not in message
    assert err.value.kind is ErrorKind.SERVER
    assert model.usage == Usage()
    assert events[0].error == message and events[0].attempts == 3
    assert events[0].error_kind == "server"


def test_client_errors_are_not_retried() -> None:
    model = scripted_model(
        [scripted.error(400, message="bad field"), scripted.text("x")], retry=QUICK
    )
    with pytest.raises(ModelError, match="HTTP 400: bad field;") as err:
        model.generate_sync("hi")
    assert err.value.attempts == 1
    assert isinstance(model.adapter, ScriptedAdapter) and model.adapter.remaining == 1


def test_retry_after_is_honoured() -> None:
    slow_backoff = RetryPolicy(max_attempts=2, backoff_s=30.0, backoff_max_s=30.0)
    model = scripted_model(
        [scripted.error(429, retry_after=0.3), scripted.text("ok")], retry=slow_backoff
    )
    t0 = time.perf_counter()
    assert model.generate_sync("hi").text == "ok"
    assert 0.3 <= time.perf_counter() - t0 < 5.0  # the server's 0.3 s, not the 30 s backoff


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    import random

    policy = RetryPolicy(backoff_s=1.0, backoff_max_s=5.0)
    rng = random.Random(0)
    delays = [policy.delay(n, None, rng) for n in (1, 2, 3, 4, 5)]
    assert 0.5 <= delays[0] <= 1.0 and 1.0 <= delays[1] <= 2.0 and 2.0 <= delays[2] <= 4.0
    assert all(d <= 5.0 for d in delays)
    assert policy.delay(1, 3.0, rng) == 3.0  # Retry-After replaces the backoff


def test_a_retry_after_beyond_the_longest_wait_ends_the_call() -> None:
    model = scripted_model(
        [scripted.error(429, retry_after=120.0), scripted.text("x")], retry=QUICK
    )
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match="HTTP 429") as err:
        model.generate_sync("hi")
    assert err.value.attempts == 1 and time.perf_counter() - t0 < 1.0


def test_per_call_timeout_then_retry() -> None:
    events: list[ModelCallEvent] = []
    model = scripted_model(
        [scripted.timeout(seconds=5.0), scripted.text("second try")],
        retry=QUICK,
        timeout_s=0.1,
        sink=events.append,
    )
    t0 = time.perf_counter()
    assert model.generate_sync("hi").text == "second try"
    assert time.perf_counter() - t0 < 2.0
    assert events[0].attempts == 2


def test_timeout_from_config_overrides_model_default() -> None:
    model = scripted_model([scripted.timeout(seconds=5.0, times=3)], retry=QUICK, timeout_s=60.0)
    with pytest.raises(ModelError, match=r"no answer within 0.05 s after 3 attempts") as err:
        model.generate_sync("hi", config=GenerateConfig(timeout_s=0.05))
    assert err.value.kind is ErrorKind.TIMEOUT


def test_cache_hit_makes_no_second_call(tmp_path: Path) -> None:
    events: list[ModelCallEvent] = []
    cache = ResponseCache(tmp_path / "responses.sqlite3")
    model = scripted_model([scripted.text("only once", usage=U)], cache=cache, sink=events.append)
    first = model.generate_sync("same question")
    second = model.generate_sync("same question")
    assert (first.cached, second.cached) == (False, True)
    assert second.text == "only once"
    assert model.usage == U and model.cache_hits == 1  # a hit bills nothing
    assert [e.cached for e in events] == [False, True]
    # A new Model (a new process, say) reads the same file.
    again = scripted_model([], cache=ResponseCache(tmp_path / "responses.sqlite3"))
    assert again.generate_sync("same question").text == "only once"


def test_cache_keeps_one_connection_and_follows_a_replaced_file(tmp_path: Path) -> None:
    import pickle
    import shutil
    import threading

    path = tmp_path / "cache" / "responses.sqlite3"
    cache = ResponseCache(path)
    assert cache.get("k") is None and len(cache) == 0 and not path.exists()  # reads create nothing
    cache.put("k", "m", ModelOutput.from_text("one"))
    cache.flush()  # stores are written behind; flush writes them now
    first = cache._connection(create=False)
    cache.put("k2", "m", ModelOutput.from_text("two"))
    cache.flush()
    assert first is not None and cache._connection(create=False) is first  # no open per call
    # Another thread gets its own connection and sees the same rows.
    seen: list[str | None] = []
    worker = threading.Thread(target=lambda: seen.append(getattr(cache.get("k"), "text", None)))
    worker.start()
    worker.join()
    assert seen == ["one"]
    # The folder removed (a user clearing the cache): nothing stale is served, and a store
    # makes a new file.
    shutil.rmtree(path.parent)
    assert cache.get("k") is None and len(cache) == 0
    cache.put("k3", "m", ModelOutput.from_text("three"))
    cache.flush()
    assert cache.get("k3") is not None and cache.get("k") is None and len(cache) == 1
    # Pickled for a worker process: the path travels, the connection does not.
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.path == path and copy.get("k3") is not None
    cache.clear()
    assert len(copy) == 0
    cache.close()
    copy.close()


def test_a_miss_runs_no_statement_and_only_a_hit_looks_at_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from omnilab.models import cache_index

    monkeypatch.setattr(cache_index, "REFRESH_S", 3600.0)  # no refresh during the test
    path = tmp_path / "cache" / "responses.sqlite3"
    cache = ResponseCache(path)
    cache.put("k", "m", ModelOutput.from_text("one"))
    cache.flush()
    assert cache.get("first") is None  # loads the key index: the file's one key
    held = cache._held()
    assert held is not None
    statements: list[str] = []
    held[1].set_trace_callback(statements.append)
    looks: list[bool] = []
    real = ResponseCache._connection

    def counted(self: ResponseCache, *, create: bool) -> Any:
        looks.append(create)
        return real(self, create=create)

    monkeypatch.setattr(ResponseCache, "_connection", counted)
    # A new run's calls all miss: no statement and no system call on the file for them.
    assert all(cache.get(f"new {i}") is None for i in range(50))
    assert statements == [] and looks == []
    assert getattr(cache.get("k"), "text", None) == "one" and len(looks) == 1
    assert any("SELECT output" in s for s in statements)
    # The folder removed and the file made again by another writer: the open connection still
    # reads the removed file, whose row is not served; the file as it is now answers.
    shutil.rmtree(path.parent)
    other = ResponseCache(path)
    other.put("k", "m", ModelOutput.from_text("two"))
    other.flush()
    assert getattr(cache.get("k"), "text", None) == "two"
    shutil.rmtree(path.parent)
    assert cache.get("k") is None  # found in the removed file, gone from disk: not served
    cache.close()
    other.close()


def test_cache_key_follows_media_content_not_path(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.png", tmp_path / "copy.png", tmp_path / "other.png"
    a.write_bytes(b"picture one")
    b.write_bytes(b"picture one")
    c.write_bytes(b"picture two")
    cache = ResponseCache(tmp_path / "r.sqlite3")
    steps = [scripted.text("about one"), scripted.text("about two")]
    model = scripted_model(steps, cache=cache)

    def ask(path: Path) -> ModelOutput:
        return model.generate_sync([Message.user("what is it?", Image(path=path))])

    assert ask(a).text == "about one"
    assert ask(b).cached  # same bytes, other name
    assert ask(c).text == "about two"  # other bytes: a miss
    assert len(cache) == 2


def test_cache_key_covers_tools_and_config_but_not_timeout(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite3")
    model = scripted_model(
        [scripted.text("1"), scripted.text("2"), scripted.text("3")], cache=cache
    )
    model.generate_sync("q")
    assert model.generate_sync("q", config=GenerateConfig(timeout_s=9)).cached
    assert model.generate_sync("q", tools=[SEARCH]).text == "2"
    assert model.generate_sync("q", config=GenerateConfig(temperature=0.5)).text == "3"


def test_malformed_text_tool_call_is_recovered_and_flagged() -> None:
    model = scripted_model([scripted.malformed_tool_call("search", {"q": "cats"})])
    out = model.generate_sync("find cats", tools=[SEARCH])
    assert [(c.name, c.arguments, c.recovered) for c in out.tool_calls] == [
        ("search", {"q": "cats"}, True)
    ]
    assert out.text == ""


def test_broken_text_tool_call_stays_text() -> None:
    model = scripted_model([scripted.malformed_tool_call("search", {"q": "cats"}, style="broken")])
    out = model.generate_sync("find cats", tools=[SEARCH])
    assert out.tool_calls == []
    assert out.text.startswith("<tool_call>")


def test_empty_message_and_exhausted_script() -> None:
    model = scripted_model([scripted.empty()])
    out = model.generate_sync("hi")
    assert (out.text, out.tool_calls, out.finish_reason) == ("", [], "stop")
    with pytest.raises(ModelError, match="all 1 scripted outputs were already used") as err:
        model.generate_sync("again")
    assert err.value.kind is ErrorKind.EXHAUSTED


class _Leaky:
    """An adapter whose errors echo its key, as some servers do."""

    capabilities = Capabilities()
    endpoint = "leaky"
    secrets = ("sk-live-0123456789abcdef",)

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        raise ProviderError(
            ErrorKind.SERVER, "upstream failed for key sk-live-0123456789abcdef", status=502
        )


def test_keys_never_reach_errors_events_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="omnilab.models")
    events: list[ModelCallEvent] = []
    model = Model(_Leaky(), name="openai:gpt-4o", retry=QUICK, sink=events.append)
    with pytest.raises(ModelError) as err:
        model.generate_sync("hi")
    assert "attempt 1 failed (HTTP 502: upstream failed for key ***)" in caplog.text
    shown = str(err.value) + events[0].model_dump_json() + caplog.text
    assert "sk-live" not in shown and "0123456789abcdef" not in shown
    assert "upstream failed for key ***" in str(err.value)


class _Counting:
    """Tracks how many calls are in flight at once."""

    capabilities = Capabilities()
    secrets: tuple[str, ...] = ()

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.active = 0
        self.peak = 0

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.02)
        self.active -= 1
        return ModelOutput.from_text("ok")


def test_concurrency_is_bounded_per_endpoint() -> None:
    adapter = _Counting("http://shared:8000/v1")
    one = Model(adapter, name="a", concurrency=3)
    two = Model(adapter, name="b", concurrency=3)

    async def burst() -> None:
        await asyncio.gather(*(m.generate("hi") for m in [one, two] * 10))

    asyncio.run(burst())
    assert adapter.peak == 3  # both models share the endpoint's limit
    asyncio.run(burst())  # a second event loop gets working limits too
    assert one.calls == 20 and two.calls == 20


def test_event_summarises_input_without_bytes(tmp_path: Path) -> None:
    events: list[ModelCallEvent] = []
    model = scripted_model([scripted.text("ok")], sink=events.append)
    image = Image(data=b"\x00" * 1000, mime_type="image/png")
    model.generate_sync(
        [Message.system("be brief"), Message.user("what is this?", image)], tools=[SEARCH]
    )
    summary = events[0].input
    assert summary.roles == {"system": 1, "user": 1}
    assert summary.parts == {"text": 2, "image": 1}
    assert summary.tools == ["search"] and summary.last_user_text == "what is this?"
    assert "AAAA" not in events[0].input.model_dump_json()
    # The full input (``sent``) keeps the messages as they were sent; the trajectory writer
    # stores inline bytes as files beside the trajectory (tests/agents/test_session.py).
    assert events[0].sent is not None and events[0].sent.messages[1].content[1] == image
    assert ModelCallEvent.model_validate_json(events[0].model_dump_json()) == events[0]
