"""Web, image and video search providers against a fake server with recorded-style JSON:
requests, mapping to results, keys, thumbnails fetched safely, caching."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage
from test_web_fakes import FakeWeb, Reply

from omnilab.config import get_settings
from omnilab.content import Image
from omnilab.tools.mediasearch import MediaHit, MediaSearch, media_provider_names, render_results
from omnilab.tools.mediasearch.thumbs import fetch_thumbnail
from omnilab.tools.web import WebError, WebErrorCode

KEY = "sk-media-SECRET-7777"
KEY_ENVS = ("SERPER_API_KEY", "TAVILY_API_KEY", "BRAVE_API_KEY")


@pytest.fixture()
def web() -> Iterator[FakeWeb]:
    with FakeWeb() as server:
        yield server


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in KEY_ENVS:
        monkeypatch.setenv(env, KEY)


def png(color: str = "red", size: tuple[int, int] = (40, 30)) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def find(provider: str, web: FakeWeb, kind: str, query: str = "eiffel tower") -> list[MediaHit]:
    searcher = MediaSearch(provider, base_url=web.url, top_k=3, cache=False)
    hits, _cached = asyncio.run(searcher.search(query, kind))  # type: ignore[arg-type]
    return hits


# Shapes as the APIs document them (trimmed), with made-up URLs.
SERPER_IMAGES = {
    "images": [
        {
            "title": "Eiffel Tower at night",
            "imageUrl": "https://img.example/eiffel.jpg",
            "thumbnailUrl": "https://tbn.example/eiffel",
            "source": "Wikimedia",
            "link": "https://commons.example/eiffel",
        }
    ]
}
SERPER_VIDEOS = {
    "videos": [
        {
            "title": "Eiffel Tower light show",
            "link": "https://video.example/watch?v=1",
            "snippet": "Sparkling lights every hour.",
            "imageUrl": "https://i.video.example/1.jpg",
            "duration": "3:42",
            "date": "Jan 2, 2024",
        }
    ]
}


def test_serper_web_image_video(web: FakeWeb) -> None:
    web.routes["/search"] = Reply.json(
        {"organic": [{"title": "Eiffel", "link": "https://a.example", "snippet": "Iron."}]}
    )
    web.routes["/images"] = Reply.json(SERPER_IMAGES)
    web.routes["/videos"] = Reply.json(SERPER_VIDEOS)
    (page,) = find("serper", web, "web")
    (image,) = find("serper", web, "image")
    (video,) = find("serper", web, "video")
    assert (page.kind, page.url, page.snippet) == ("web", "https://a.example", "Iron.")
    assert image.url == "https://img.example/eiffel.jpg"
    assert image.thumbnail == "https://tbn.example/eiffel"
    assert image.source_page == "https://commons.example/eiffel"
    assert (video.thumbnail, video.duration) == ("https://i.video.example/1.jpg", "3:42")
    assert [s.path for s in web.seen] == ["/search", "/images", "/videos"]
    assert all(s.headers["x-api-key"] == KEY and s.json()["num"] == 3 for s in web.seen)


def test_brave_web_image_video(web: FakeWeb) -> None:
    web.routes["/res/v1/web/search"] = Reply.json(
        {
            "web": {
                "results": [{"title": "<b>E</b>", "url": "https://e.example", "description": "d"}]
            }
        }
    )
    web.routes["/res/v1/images/search"] = Reply.json(
        {
            "results": [
                {
                    "title": "Tower",
                    "url": "https://page.example/t",
                    "source": "page.example",
                    "thumbnail": {"src": "https://imgs.search.brave.example/t.jpg"},
                    "properties": {"url": "https://page.example/t.jpg"},
                }
            ]
        }
    )
    web.routes["/res/v1/videos/search"] = Reply.json(
        {
            "results": [
                {
                    "title": "Clip",
                    "url": "https://v.example/c",
                    "description": "a clip",
                    "thumbnail": {"src": "https://imgs.search.brave.example/c.jpg"},
                    "video": {"duration": "01:05"},
                }
            ]
        }
    )
    (page,) = find("brave", web, "web")
    (image,) = find("brave", web, "image")
    (video,) = find("brave", web, "video")
    assert page.title == "E" and page.thumbnail is None
    assert (
        image.url == "https://page.example/t.jpg" and image.source_page == "https://page.example/t"
    )
    assert image.thumbnail == "https://imgs.search.brave.example/t.jpg"
    assert video.duration == "01:05" and video.snippet == "a clip"
    assert all(s.headers["x-subscription-token"] == KEY for s in web.seen)
    assert web.seen[1].query["count"] == ["3"]


def test_searxng_categories(web: FakeWeb) -> None:
    def reply(seen: Any) -> Reply:
        category = seen.query["categories"][0]
        record: dict[str, str] = {"title": category, "url": f"https://s.example/{category}"}
        if category == "images":
            record |= {
                "img_src": "https://s.example/full.png",
                "thumbnail_src": "https://s.example/t.png",
            }
        if category == "videos":
            record |= {"thumbnail": "https://s.example/v.jpg", "length": "0:42", "content": "v"}
        return Reply.json({"results": [record]})

    web.routes["/search"] = reply
    monkey_url = web.url
    hits = {
        kind: MediaSearch("searxng", base_url=monkey_url, cache=False)
        for kind in ("web", "image", "video")
    }
    found = {k: asyncio.run(s.search("q", k))[0][0] for k, s in hits.items()}  # type: ignore[arg-type]
    assert [s.query["categories"] for s in web.seen] == [["general"], ["images"], ["videos"]]
    assert all(s.query["format"] == ["json"] for s in web.seen)
    assert found["image"].url == "https://s.example/full.png"
    assert found["image"].thumbnail == "https://s.example/t.png"
    assert found["video"].duration == "0:42" and found["web"].thumbnail is None


def test_an_api_cannot_make_us_read_a_local_file(web: FakeWeb, tmp_path: Path) -> None:
    secret = tmp_path / "secret.jpg"
    PILImage.new("RGB", (8, 8)).save(secret)
    web.routes["/images"] = Reply.json(
        {
            "images": [
                {"title": "x", "imageUrl": "https://i.example/x.jpg", "thumbnailUrl": str(secret)}
            ]
        }
    )
    (hit,) = find("serper", web, "image")
    assert hit.thumbnail is None and hit.url == "https://i.example/x.jpg"  # path dropped
    forged = MediaHit(kind="image", title="x", url="u", thumbnail=str(secret), provider="serper")
    parts = asyncio.run(render_results("q", [forged], images=True))
    assert [p.type for p in parts] == ["text"]


def test_tavily_text_and_images_but_no_video(web: FakeWeb) -> None:
    web.routes["/search"] = Reply.json(
        {
            "results": [{"title": "T", "url": "https://t.example", "content": "c"}],
            "images": [{"url": "https://t.example/i.png", "description": "a tower at dusk"}],
        }
    )
    (page,) = find("tavily", web, "web")
    (image,) = find("tavily", web, "image")
    assert page.snippet == "c" and image.snippet == "a tower at dusk"
    assert web.seen[1].json()["include_images"] is True
    assert web.seen[0].headers["authorization"] == f"Bearer {KEY}"
    with pytest.raises(WebError) as caught:
        find("tavily", web, "video")
    assert caught.value.code is WebErrorCode.INVALID_ARGS and "tavily" in caught.value.message


@pytest.mark.parametrize("env", KEY_ENVS)
def test_missing_key_names_the_variable(
    web: FakeWeb, monkeypatch: pytest.MonkeyPatch, env: str
) -> None:
    monkeypatch.delenv(env)
    with pytest.raises(WebError) as caught:
        find(env.removesuffix("_API_KEY").lower(), web, "web")
    assert caught.value.code is WebErrorCode.MISSING_KEY and env in caught.value.message


def test_a_key_echoed_by_the_api_is_scrubbed(web: FakeWeb) -> None:
    web.routes["/images"] = Reply(401, f"bad key {KEY}")
    with pytest.raises(WebError) as caught:
        find("serper", web, "image")
    assert KEY not in caught.value.message and "SERPER_API_KEY" in caught.value.message


def test_remote_results_are_cached(web: FakeWeb) -> None:
    web.routes["/videos"] = Reply.json(SERPER_VIDEOS)
    searcher = MediaSearch("serper", base_url=web.url)
    first = asyncio.run(searcher.search("tower", "video"))
    second = asyncio.run(searcher.search("tower", "video"))
    assert (first[1], second[1]) == (False, True) and first[0] == second[0]
    assert len(web.seen) == 1


def test_providers_are_registered() -> None:
    assert {"local", "serper", "brave", "searxng", "tavily"} <= set(media_provider_names())


def _allow_private(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_WEB__ALLOW_PRIVATE_URLS", "true")
    get_settings.cache_clear()


def test_thumbnails_are_fetched_reencoded_and_cached(
    web: FakeWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    _allow_private(monkeypatch)
    web.routes["/t.png"] = Reply(200, png(), {"Content-Type": "image/png"})
    path = asyncio.run(fetch_thumbnail(web.url + "/t.png"))
    assert path is not None and path.read_bytes()[:2] == b"\xff\xd8"  # a JPEG we wrote
    assert asyncio.run(fetch_thumbnail(web.url + "/t.png")) == path
    assert len(web.seen) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, "<html>not a picture</html>", {"Content-Type": "text/html"}),
        Reply(200, b"\x00" * 3_000_000, {"Content-Type": "image/png"}),
        Reply(200, b"not really a png", {"Content-Type": "image/png"}),
        Reply(404, "gone"),
    ],
)
def test_unsafe_or_broken_thumbnails_are_dropped(
    web: FakeWeb, monkeypatch: pytest.MonkeyPatch, reply: Reply
) -> None:
    _allow_private(monkeypatch)
    web.routes["/x"] = reply
    assert asyncio.run(fetch_thumbnail(web.url + "/x")) is None


def test_private_thumbnail_addresses_are_refused_by_default(web: FakeWeb) -> None:
    web.routes["/t.png"] = Reply(200, png(), {"Content-Type": "image/png"})
    assert asyncio.run(fetch_thumbnail(web.url + "/t.png")) is None
    assert web.seen == []  # refused before connecting


def test_rendered_results_carry_each_thumbnail_after_its_text(
    web: FakeWeb, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _allow_private(monkeypatch)
    web.routes["/a.png"] = Reply(200, png("blue"), {"Content-Type": "image/png"})
    local = tmp_path / "poster.jpg"
    PILImage.new("RGB", (8, 8)).save(local)
    hits = [
        MediaHit(
            kind="image",
            title="A",
            url="https://x.example/a",
            thumbnail=web.url + "/a.png",
            provider="p",
        ),
        MediaHit(
            kind="video",
            title="B",
            url="video://b.mp4#t=3,9",
            thumbnail=str(local),
            start_s=3,
            end_s=9,
            provider="local",
        ),
        MediaHit(
            kind="image",
            title="C",
            url="https://x.example/c",
            thumbnail=web.url + "/gone",
            provider="p",
        ),
    ]
    parts = asyncio.run(render_results("q", hits, images=True))
    assert [p.type for p in parts] == ["text", "image", "text", "image", "text"]
    assert "3.0-9.0 s" in parts[2].text  # type: ignore[union-attr]
    assert isinstance(parts[3], Image) and parts[3].path == local
    assert "picture" not in parts[4].text  # type: ignore[union-attr]
    without = asyncio.run(render_results("q", hits, images=False))
    assert [p.type for p in without] == ["text", "text", "text"]


def test_deepsearch_agent_on_serper_shows_pictures_and_never_records_the_key(
    web: FakeWeb, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
    from omnilab.inputs import InputSet
    from omnilab.media.synth import make_audio
    from omnilab.models.capabilities import Capabilities
    from omnilab.models.model import Model
    from omnilab.models.providers.scripted import OutputStep, ScriptedAdapter, text
    from omnilab.models.types import Message, ModelOutput, ToolCall
    from omnilab.trajectory import TrajectoryWriter

    monkeypatch.setenv("OMNILAB_WEB__SERPER_URL", web.url)
    _allow_private(monkeypatch)
    images = {
        "images": [
            {"title": "Crest", "imageUrl": web.url + "/crest.png", "link": "https://p.example"}
        ]
    }
    web.routes["/images"] = Reply.json(images)
    web.routes["/crest.png"] = Reply(200, png("yellow"), {"Content-Type": "image/png"})
    call = ToolCall(name="image_search_by_text_query", arguments={"query_list": ["crest"]})
    steps = [
        OutputStep(output=ModelOutput(message=Message.assistant("", tool_calls=[call]))),
        text("<answer>key</answer>"),
    ]
    adapter = ScriptedAdapter(steps, name="scripted:eye", capabilities=Capabilities(image=True))
    model = Model(adapter, name="scripted:eye")
    clip = make_audio(tmp_path / "c.wav", duration=0.5, sample_rate=16_000)
    task = AgentTask(id="t", question="What is held?", inputs=list(InputSet.from_paths([clip])))
    path = tmp_path / "run.jsonl"
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model, roles={}, tools=None, budgets=Budgets(), workspace=tmp_path / "ws",
            trajectory=writer,
        )  # fmt: skip
        asyncio.run(get_agent("deepsearch", search="serper", audio="transcript").run(task, ctx))
    sent = adapter.requests[1][0][-1]
    assert [p.type for p in sent.content] == ["text", "image"]
    assert web.requests_to("/images")[0].headers["x-api-key"] == KEY
    assert KEY not in path.read_text(encoding="utf-8")
