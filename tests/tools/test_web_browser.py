"""page_browser against a fake server and the local corpus: text, paging, limits, refusals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_web_fakes import FakeWeb, Reply

from omnilab.tools import ToolResult
from omnilab.tools.web import build_index, page_browser_tool, web_tools

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "folder"

ARTICLE = """<!DOCTYPE html><html><head><title>Bridges of Chicago</title></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/login">Sign in</a></nav>
<main><article><h1>Bridges of Chicago</h1>
<p>Chicago has more movable bridges than almost any other city. Most of them are bascule
bridges, whose leaves lift to let ships pass along the Chicago River.</p>
<h2>History</h2>
<ul><li>The first movable bridge opened in 1834.</li><li>Many were rebuilt in the 1900s.</li></ul>
<p>The LaSalle Street Bridge crosses the main branch of the river in the Loop.</p>
</article></main>
<footer>Subscribe to our newsletter. Cookie settings.</footer></body></html>"""


@pytest.fixture()
def web() -> Iterator[FakeWeb]:
    with FakeWeb() as server:
        yield server


def browse(urls: Any, **options: Any) -> ToolResult:
    options.setdefault("allow_private", True)  # the fake server lives on 127.0.0.1
    return asyncio.run(page_browser_tool(**options)({"urls": urls}))


def error_code(result: ToolResult) -> str:
    assert result.error is not None, result.text
    return result.error.code


def test_html_page_becomes_markdown_main_text(web: FakeWeb) -> None:
    web.routes["/article"] = Reply.html(ARTICLE)
    result = browse([web.url + "/article"])
    assert result.ok, result.text
    text = result.text
    assert text.startswith(f"Title: Bridges of Chicago\nURL: {web.url}/article\n\n")
    assert "# Bridges of Chicago" in text and "## History" in text
    assert "- The first movable bridge opened in 1834." in text
    assert "LaSalle Street Bridge" in text
    assert "Sign in" not in text and "newsletter" not in text and "<p>" not in text
    assert "Page 1 of" not in text  # short pages are not paged
    assert web.seen[0].headers["user-agent"].startswith("Mozilla/5.0 (compatible; omnilab)")


def test_plain_text_pages_and_json_string_urls(web: FakeWeb) -> None:
    web.routes["/notes.txt"] = Reply(200, "line one\nline two\n", {"Content-Type": "text/plain"})
    result = browse(f'["{web.url}/notes.txt"]')  # a JSON list sent as a string
    assert result.ok and result.text.endswith("line one\nline two")


def test_long_pages_are_paged_through_the_url(web: FakeWeb) -> None:
    paragraphs = "".join(f"<p>Paragraph {i}: {'lorem ipsum ' * 40}</p>" for i in range(30))
    web.routes["/long"] = Reply.html(f"<html><body><article>{paragraphs}</article></body></html>")
    first = browse([web.url + "/long"], page_chars=2000)
    assert first.ok
    header = first.text.split("\n\n", 1)[0]
    count = int(header.split("Page 1 of ")[1].split(";")[0])
    assert count > 3
    assert f'call page_browser with "{web.url}/long#page=2"' in header
    body = first.text.split("\n\n", 1)[1]
    assert len(body) <= 2000 and "Paragraph 0:" in body
    second = browse([web.url + "/long#page=2"], page_chars=2000)
    assert f"Page 2 of {count}" in second.text and "Paragraph 0:" not in second.text
    last = browse([f"{web.url}/long#page={count}"], page_chars=2000)
    assert f"Page {count} of {count} (last page)" in last.text and "Paragraph 29:" in last.text
    beyond = browse([f"{web.url}/long#page={count + 1}"], page_chars=2000)
    assert error_code(beyond) == "INVALID_ARGS" and f"has {count} page(s)" in beyond.text
    assert len(web.seen) == 1  # every later page came from the cache


def test_huge_page_is_too_large_and_not_read_to_the_end(web: FakeWeb) -> None:
    chunk = "<p>" + "x" * 1000 + "</p>"
    web.routes["/huge"] = Reply(
        200, chunk, {"Content-Type": "text/html"}, repeat=20_000, content_length=False
    )
    web.routes["/declared"] = Reply(200, chunk, {"Content-Type": "text/html"}, repeat=200)
    began = time.monotonic()
    result = browse([web.url + "/huge"], max_bytes=64 * 1024)
    assert error_code(result) == "TOO_LARGE" and "page limit" in result.text
    assert time.monotonic() - began < 5.0
    declared = browse([web.url + "/declared"], max_bytes=64 * 1024)
    assert error_code(declared) == "TOO_LARGE"
    assert "is 201 kB, over the 66 kB page limit" in declared.text


def test_slow_page_times_out_within_the_limit(web: FakeWeb) -> None:
    web.routes["/slow"] = Reply.html(ARTICLE)
    web.routes["/slow"].delay = 10.0
    began = time.monotonic()
    result = browse([web.url + "/slow"], timeout_s=0.5)
    assert time.monotonic() - began < 3.0
    assert error_code(result) == "TIMEOUT" and "0.5 s" in result.text


def test_redirects_are_followed_and_loops_stopped(web: FakeWeb) -> None:
    web.routes["/old"] = Reply(301, "", {"Location": "/article"})
    web.routes["/article"] = Reply.html(ARTICLE)
    moved = browse([web.url + "/old"])
    assert moved.ok and f"Source: {web.url}/article" in moved.text
    web.routes["/loop"] = Reply(302, "", {"Location": "/loop"})
    looped = browse([web.url + "/loop"], max_redirects=3)
    assert error_code(looped) == "TOO_MANY_REDIRECTS"
    assert len(web.requests_to("/loop")) == 4  # the first request and three redirects


def test_redirect_to_a_local_file_is_refused(web: FakeWeb) -> None:
    web.routes["/sneaky"] = Reply(302, "", {"Location": "file:///etc/passwd"})
    result = browse([web.url + "/sneaky"])
    assert error_code(result) == "INVALID_URL" and "file://" in result.text


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.org/x",
        "javascript:alert(1)",
        "example.org/x",
        "http://[::1",
        "http://example.org:99999/",
    ],
)
def test_other_schemes_are_refused(url: str) -> None:
    result = browse([url])
    assert error_code(result) == "INVALID_URL" and result.text.count("\n") == 0
    if not url.startswith("http"):
        assert "http(s) URLs and corpus://<doc_id>" in result.text


def test_local_addresses_are_refused_by_default(web: FakeWeb) -> None:
    web.routes["/article"] = Reply.html(ARTICLE)
    for url in (web.url + "/article", web.url.replace("127.0.0.1", "localhost") + "/article"):
        result = browse([url], allow_private=False)
        assert error_code(result) == "REFUSED" and "public web pages only" in result.text
    for url in ("http://10.0.0.1/", "http://169.254.169.254/latest/meta-data", "http://[::1]/"):
        assert error_code(browse([url], allow_private=False)) == "REFUSED"
    assert web.seen == []


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply(200, b"\x89PNG\r\n\x1a\n\0\0", {"Content-Type": "image/png"}), "image/png"),
        (Reply(200, b"%PDF-1.7", {"Content-Type": "application/pdf"}), "application/pdf"),
        (Reply(200, b"\0\1\2\3" * 100), "binary data"),  # no type declared, binary bytes
        (Reply(200, b"<html>\0\0\0</html>", {"Content-Type": "text/html"}), "binary data"),
    ],
)
def test_binary_content_is_a_clear_error(web: FakeWeb, reply: Reply, words: str) -> None:
    web.routes["/file"] = reply
    result = browse([web.url + "/file"])
    assert error_code(result) == "UNSUPPORTED_TYPE"
    assert words in result.text and "reads HTML and text" in result.text


def test_http_errors_and_empty_pages(web: FakeWeb) -> None:
    missing = browse([web.url + "/nowhere"])
    assert error_code(missing) == "HTTP_ERROR" and "HTTP 404" in missing.text
    web.routes["/blank"] = Reply.html("<html><body><script>app()</script></body></html>")
    blank = browse([web.url + "/blank"])
    assert error_code(blank) == "NO_TEXT" and "JavaScript" in blank.text


def test_several_urls_report_each_error_beside_the_pages(web: FakeWeb) -> None:
    web.routes["/article"] = Reply.html(ARTICLE)
    result = browse([web.url + "/article", web.url + "/gone", "file:///etc/passwd"])
    assert result.ok
    sections = result.text.split("\n\n---\n\n")
    assert len(sections) == 3 and "LaSalle" in sections[0]
    assert sections[1].startswith("Error [HTTP_ERROR]") and sections[2].startswith("Error [INVALID")
    assert result.metadata["errors"] == {
        web.url + "/gone": "HTTP_ERROR",
        "file:///etc/passwd": "INVALID_URL",
    }
    both_bad = browse([web.url + "/gone", web.url + "/gone2"])
    assert error_code(both_bad) == "HTTP_ERROR" and " | " in both_bad.text


def test_url_count_is_limited_by_the_schema() -> None:
    result = browse([f"https://example.org/{i}" for i in range(11)])
    assert error_code(result) == "INVALID_ARGS" and "1 to 10" in result.text
    assert error_code(browse([])) == "INVALID_ARGS"


def test_pages_are_cached_unless_disabled(web: FakeWeb) -> None:
    web.routes["/article"] = Reply.html(ARTICLE)
    first = browse([web.url + "/article"])
    second = browse([web.url + "/article"])
    assert second.text == first.text and len(web.seen) == 1
    browse([web.url + "/article"], cache=False)
    assert len(web.seen) == 2


def test_corpus_documents_by_id(tmp_path: Path) -> None:
    index = build_index(CORPUS, tmp_path / "index")
    result = browse(["corpus://astronomy/jupiter"], index_dir=index)
    assert result.ok
    assert result.text.startswith("Title: Jupiter\nURL: corpus://astronomy/jupiter\n\n")
    assert "Galilean moons" in result.text
    etna = browse(["corpus://volcanoes"], index_dir=index)
    assert "Source: https://example.org/etna" in etna.text  # the document's own URL
    missing = browse(["corpus://no-such-doc"], index_dir=index)
    assert error_code(missing) == "NOT_FOUND" and "no-such-doc" in missing.text
    paged = browse(["corpus://rivers#page=2"], index_dir=index, page_chars=600)
    assert paged.ok and "Page 2 of" in paged.text


def test_search_and_browse_share_the_sample_corpus() -> None:
    web_search, page_browser = web_tools()
    found = asyncio.run(web_search({"query": "omnilab demo video"}))
    first_url = found.metadata["hits"][0]["url_or_id"]
    assert first_url == "corpus://omnilab"
    page = asyncio.run(page_browser({"urls": [first_url]}))
    assert page.ok and '"omnilab demo"' in page.text
