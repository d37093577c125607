"""The web tools' exact OmniGAIA schemas, rendering, paging helpers, cache and lazy imports."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from importlib import resources

import pytest

from omnilab.config import get_settings
from omnilab.tools.web import (
    SearchHit,
    WebError,
    WebErrorCode,
    page_browser_tool,
    render_hits,
    web_search_tool,
)
from omnilab.tools.web.browser import Browser, paginate, split_page_fragment
from omnilab.tools.web.cache import WebCache


def schema_file() -> dict[str, object]:
    text = resources.files("omnilab.tools.web").joinpath("omnigaia_web_tools.json").read_text()
    data: dict[str, object] = json.loads(text)
    return data


def test_tools_use_the_exact_omnigaia_schemas() -> None:
    data = schema_file()
    for made in (web_search_tool("local"), page_browser_tool()):
        expected = data[made.name]
        assert made.spec.model_dump() == expected
    # The model sees the reference arguments only, not omnilab's own options.
    search = web_search_tool("local").spec.parameters
    assert search["required"] == ["query"] and list(search["properties"]) == ["query"]
    assert search["properties"]["query"]["type"] == "string"
    assert "additionalProperties" not in search
    browser = page_browser_tool().spec.parameters
    assert browser["required"] == ["urls"]
    assert browser["properties"]["urls"]["maxItems"] == 10
    assert browser["properties"]["urls"]["items"] == {"type": "string", "format": "uri"}


def test_schema_file_names_its_source() -> None:
    source = schema_file()["source"]
    assert isinstance(source, dict)
    assert source["repository"] == "RUC-NLPIR/OmniGAIA"
    assert source["path"] == "src/tools/web_tools.py" and len(str(source["commit"])) == 40


def test_render_hits_is_compact_and_numbered() -> None:
    hits = [
        SearchHit(title="A", url_or_id="corpus://a", snippet="first\n  line", provider="local"),
        SearchHit(title="", url_or_id="https://b", snippet="", provider="x", date="2020"),
    ]
    assert render_hits("q", hits) == (
        "1. A\n   URL: corpus://a\n   first line\n2. (untitled)\n   URL: https://b\n   Date: 2020"
    )
    assert render_hits("q", []) == "No results for 'q'. Try other or fewer keywords."


def test_unexpected_provider_failures_never_raise_into_the_agent() -> None:
    class Broken:
        name = "broken"

        async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
            raise RuntimeError("provider bug")

    class Refusing:
        async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
            raise WebError(WebErrorCode.HTTP_ERROR, "HTTP 503 from upstream")

    broken = asyncio.run(web_search_tool(Broken())({"query": "x"}))
    assert broken.error is not None and broken.error.code == "TOOL_FAILED"
    refusing = asyncio.run(web_search_tool(Refusing())({"query": "x"}))
    assert refusing.error is not None and refusing.error.code == "HTTP_ERROR"
    bad_args = asyncio.run(web_search_tool(Broken())({"q": "x"}))
    assert bad_args.error is not None and bad_args.error.code == "INVALID_ARGS"


def test_top_k_must_be_positive() -> None:
    with pytest.raises(WebError, match="top_k"):
        web_search_tool("local", top_k=0)


def test_page_fragment_and_pagination() -> None:
    assert split_page_fragment("https://x/y#page=3") == ("https://x/y", 3)
    assert split_page_fragment(" corpus://a/b ") == ("corpus://a/b", 1)
    assert split_page_fragment("https://x/y#section") == ("https://x/y#section", 1)
    text = "\n\n".join(f"para {i} " + "w" * 80 for i in range(20))
    pages = paginate(text, 400)
    assert all(len(p) <= 400 for p in pages) and len(pages) > 4
    assert all(p.startswith("para ") for p in pages)  # cut at paragraph ends
    assert "".join(pages).replace("\n", "") == text.replace("\n", "")
    assert paginate("", 400) == [""]
    assert paginate("x" * 1000, 400) == ["x" * 400, "x" * 400, "x" * 200]


def test_browser_options_default_to_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_WEB__PAGE_CHARS", "1234")
    monkeypatch.setenv("OMNILAB_WEB__TIMEOUT_S", "7")
    monkeypatch.setenv("OMNILAB_WEB__CACHE", "false")
    get_settings.cache_clear()
    browser = Browser()
    assert (browser.page_chars, browser.timeout_s, browser.cache.enabled) == (1234, 7.0, False)
    assert not browser.allow_private and browser.max_bytes == 5 * 1024**2


def test_cache_expires_and_survives_damage() -> None:
    cache = WebCache("unit", ttl_s=60)
    assert cache.get(["k"]) is None
    cache.put(["k"], {"v": 1})
    assert cache.get(["k"]) == {"v": 1}
    assert WebCache("unit", ttl_s=0).get(["k"]) is None
    assert WebCache("unit", enabled=False).get(["k"]) is None
    (entry,) = cache.folder.rglob("*.json")
    entry.write_text("{broken")
    assert cache.get(["k"]) is None


def test_importing_the_package_loads_no_heavy_library() -> None:
    code = (
        "import sys, omnilab.tools.web, omnilab.cli.index; "
        "print([m for m in ('httpx2', 'bm25s', 'trafilatura', 'numpy', 'Stemmer') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_schema_shared_copy_is_the_loaded_one_and_fresh_copies_are_independent() -> None:
    from omnilab.tools.web.schemas import omnigaia_tool_schema

    shared = omnigaia_tool_schema("web_search", fresh=False)
    assert omnigaia_tool_schema("web_search", fresh=False) is shared  # no copy per task
    fresh = omnigaia_tool_schema("web_search")
    assert fresh == shared and fresh is not shared
    fresh["parameters"]["properties"].clear()
    assert shared["parameters"]["properties"]  # a caller's edit never reaches the loaded copy
