"""Remote search providers against a fake server: requests, mapping, keys, errors, caching."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_web_fakes import FakeWeb, Reply

from omnilab.config import get_settings
from omnilab.tools import ToolResult
from omnilab.tools.web import (
    SearchHit,
    WebError,
    WebErrorCode,
    get_provider,
    provider_names,
    register_provider,
    web_search_tool,
)

KEY = "sk-test-SECRET-4242"
KEY_ENVS = ("SERPER_API_KEY", "TAVILY_API_KEY", "BRAVE_API_KEY")


@pytest.fixture()
def web() -> Iterator[FakeWeb]:
    with FakeWeb() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in KEY_ENVS:
        monkeypatch.delenv(env, raising=False)


def search(provider: str, web: FakeWeb, query: str = "eiffel tower", **options: Any) -> ToolResult:
    tool = web_search_tool(provider, base_url=web.url, **options)
    return asyncio.run(tool({"query": query}))


def assert_no_key(result: ToolResult) -> None:
    dumped = result.model_dump_json()
    assert KEY not in dumped and KEY not in result.text


SERPER = {
    "organic": [
        {"title": "Eiffel Tower", "link": "https://a.example/eiffel", "snippet": "Iron tower."},
        {"title": "Paris", "link": "https://b.example/paris", "snippet": "City.", "date": "2024"},
        {"title": "No link"},
    ]
}


def test_serper_request_and_mapping(web: FakeWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    web.routes["/search"] = Reply.json(SERPER)
    result = search("serper", web, top_k=5)
    (seen,) = web.seen
    assert seen.method == "POST" and seen.headers["x-api-key"] == KEY
    assert seen.json() == {"q": "eiffel tower", "num": 5}
    hits = [SearchHit.model_validate(h) for h in result.metadata["hits"]]
    assert [h.url_or_id for h in hits] == ["https://a.example/eiffel", "https://b.example/paris"]
    assert hits[1].date == "2024" and {h.provider for h in hits} == {"serper"}
    assert result.text.splitlines()[:3] == [
        "1. Eiffel Tower",
        "   URL: https://a.example/eiffel",
        "   Iron tower.",
    ]
    assert "Date: 2024" in result.text
    assert_no_key(result)


def test_tavily_request_and_mapping(web: FakeWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    results = [
        {"title": f"T{i}", "url": f"https://t.example/{i}", "content": f"c{i}", "score": 0.9}
        for i in range(5)
    ]
    web.routes["/search"] = Reply.json({"query": "q", "results": results})
    result = search("tavily", web, top_k=3)
    (seen,) = web.seen
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    body = seen.json()
    assert body["query"] == "eiffel tower" and body["max_results"] == 3
    assert "api_key" not in body
    hits = result.metadata["hits"]
    assert [h["url_or_id"] for h in hits] == [f"https://t.example/{i}" for i in range(3)]
    assert hits[0]["snippet"] == "c0" and hits[0]["score"] == 0.9
    assert_no_key(result)


def test_brave_request_and_mapping(web: FakeWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    item = {"title": "<strong>Eiffel</strong> Tower", "url": "https://e.example", "age": "2 days"}
    item["description"] = "The <strong>tower</strong> &amp; its history"
    web.routes["/res/v1/web/search"] = Reply.json({"web": {"results": [item]}})
    result = search("brave", web, top_k=4)
    (seen,) = web.seen
    assert seen.method == "GET" and seen.headers["x-subscription-token"] == KEY
    assert seen.query == {"q": ["eiffel tower"], "count": ["4"]}
    (hit,) = result.metadata["hits"]
    assert hit["title"] == "Eiffel Tower" and hit["snippet"] == "The tower & its history"
    assert hit["date"] == "2 days"
    assert_no_key(result)


def test_searxng_request_and_mapping(web: FakeWeb) -> None:
    results = [{"title": "S", "url": "https://s.example", "content": "snip", "score": 2.5}]
    web.routes["/search"] = Reply.json({"results": results})
    result = search("searxng", web)
    (seen,) = web.seen
    assert seen.method == "GET" and seen.query == {"q": ["eiffel tower"], "format": ["json"]}
    assert result.metadata["hits"][0]["url_or_id"] == "https://s.example"


def test_base_urls_come_from_settings(web: FakeWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_WEB__SEARCH_PROVIDER", "searxng")
    monkeypatch.setenv("OMNILAB_WEB__SEARXNG_URL", web.url + "/")
    monkeypatch.setenv("OMNILAB_WEB__TOP_K", "1")
    get_settings.cache_clear()
    results = [{"title": f"S{i}", "url": f"https://s.example/{i}"} for i in range(3)]
    web.routes["/search"] = Reply.json({"results": results})
    result = asyncio.run(web_search_tool()({"query": "x"}))
    assert result.metadata["provider"] == "searxng" and len(result.metadata["hits"]) == 1


@pytest.mark.parametrize("env", KEY_ENVS)
def test_missing_key_is_a_clean_error_at_call_time(web: FakeWeb, env: str) -> None:
    provider = env.removesuffix("_API_KEY").lower()
    tool = web_search_tool(provider, base_url=web.url)  # building the tool needs no key
    result = asyncio.run(tool({"query": "anything"}))
    assert result.error is not None and result.error.code == "MISSING_KEY"
    assert (
        env in result.error.message and "OMNILAB_WEB__SEARCH_PROVIDER=local" in result.error.message
    )
    assert web.seen == []  # nothing was sent without a key


def test_searxng_without_url_names_the_setting() -> None:
    result = asyncio.run(web_search_tool("searxng")({"query": "x"}))
    assert result.error is not None and result.error.code == "MISSING_CONFIG"
    assert "OMNILAB_WEB__SEARXNG_URL" in result.error.message


@pytest.mark.parametrize("status", [500, 429, 401])
def test_http_errors_carry_the_status_and_never_the_key(
    web: FakeWeb, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    # A careless API that echoes the key back in its error body.
    web.routes["/search"] = Reply(status, f'{{"message": "bad request for key {KEY}"}}')
    result = search("serper", web)
    assert result.error is not None and result.error.code == "HTTP_ERROR"
    assert f"HTTP {status}" in result.error.message and "***" in result.error.message
    assert_no_key(result)
    if status == 429:
        assert "rate limited" in result.error.message
    if status == 401:
        assert "SERPER_API_KEY" in result.error.message
    search("serper", web)  # errors are not cached: the next call asks again
    assert len(web.seen) == 2


def test_a_key_given_in_code_is_used_and_never_shown(web: FakeWeb) -> None:
    web.routes["/search"] = Reply(403, "forbidden")
    result = search("serper", web, api_key=KEY)
    assert web.seen[0].headers["x-api-key"] == KEY
    assert result.error is not None and result.error.code == "HTTP_ERROR"
    provider = get_provider("serper", api_key=KEY, base_url=web.url)
    assert KEY not in repr(provider) and KEY not in repr(vars(provider))


def test_slow_api_times_out(web: FakeWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    web.routes["/search"] = Reply(200, "{}", delay=5.0)
    began = time.monotonic()
    result = search("serper", web, timeout_s=0.3)
    assert time.monotonic() - began < 3.0
    assert result.error is not None and result.error.code == "TIMEOUT"


def test_non_json_answer_is_bad_response(web: FakeWeb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    web.routes["/search"] = Reply.html("<html>captcha</html>")
    result = search("serper", web)
    assert result.error is not None and result.error.code == "BAD_RESPONSE"


def test_unreachable_api_is_a_network_error() -> None:
    result = asyncio.run(web_search_tool("searxng", base_url="http://127.0.0.1:9")({"query": "x"}))
    assert result.error is not None and result.error.code == "NETWORK_ERROR"


def test_results_are_cached_per_provider_query_and_top_k(
    web: FakeWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    web.routes["/search"] = Reply.json(SERPER)
    first = search("serper", web, top_k=2)
    second = search("serper", web, top_k=2)
    assert len(web.seen) == 1 and not first.metadata["cached"] and second.metadata["cached"]
    assert second.text == first.text
    search("serper", web, top_k=3)
    search("serper", web, query="other", top_k=2)
    assert len(web.seen) == 3
    search("serper", web, top_k=2, cache=False)
    assert len(web.seen) == 4
    search("serper", web, top_k=2, cache_ttl_s=0)  # expired at once
    assert len(web.seen) == 5
    cache_files = list((get_settings().cache_dir / "web" / "search").rglob("*.json"))
    assert cache_files and all(KEY not in p.read_text() for p in cache_files)


def test_empty_query_and_no_results(web: FakeWeb) -> None:
    web.routes["/search"] = Reply.json({"results": []})
    empty = search("searxng", web, query="   ")
    assert empty.error is not None and empty.error.code == "INVALID_ARGS"
    none = search("searxng", web, query="zzz")
    assert none.ok and none.text.startswith("No results for 'zzz'")


def test_unknown_provider_and_registry() -> None:
    with pytest.raises(WebError) as err:
        web_search_tool("altavista")
    assert err.value.code is WebErrorCode.UNKNOWN_PROVIDER and "serper" in err.value.message
    assert {"local", "serper", "tavily", "brave", "searxng"} <= set(provider_names())

    class Echo:
        name = "echo"

        async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
            return [SearchHit(title=query, url_or_id="https://echo", snippet="", provider="echo")]

    register_provider("echo", Echo)
    result = asyncio.run(web_search_tool("echo")({"query": "hi"}))
    assert result.text.startswith("1. hi") and not result.metadata["cached"]
    direct = asyncio.run(web_search_tool(Echo(), top_k=1)({"query": "yo"}))
    assert direct.metadata["hits"][0]["title"] == "yo"
