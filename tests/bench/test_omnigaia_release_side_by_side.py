"""Issue 43: OmniGAIA's released agent loop and ``--protocol omnigaia-paper`` side by side.

A fixture copy of the release's ``QwenBaseAgent`` (``tests/data/omnigaia_release``, MIT, commit
af5f797f) and ``omnilab eval --protocol omnigaia-paper`` run the same three items against two
fake OpenAI-compatible servers that give the same replies: a search, an unknown tool and a call
without its argument in one reply, fenced JSON without tags, reasoning with an empty reply, and
the turn limit with its forced-final call. Every request body is compared field by field; the
only differences allowed are the ones the preset names with a reason (``omnilab protocols
omnigaia-paper``), each undone here by one function that names its gap.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.bench.protocols import get_protocol
from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.media import synth
from omnilab.models.fake_server import FakeOpenAIServer, FakeReply, reply_text
from omnilab.tools.web.providers import PROVIDERS
from omnilab.tools.web.types import SearchHit

pytestmark = pytest.mark.slow
runner = CliRunner()
FIXTURE = Path(__file__).parents[1] / "data" / "omnigaia_release" / "run_base_agent_excerpt.py"
MODEL = "qwen3-omni"  # a Qwen name: the release's Qwen path; omnilab's omni capability flags


def _release() -> ModuleType:
    spec = importlib.util.spec_from_file_location("omnigaia_release_excerpt", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Hits:
    """The search provider of omnilab's side: the hit the release's stub returns."""

    name = "side-by-side"

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        return [
            SearchHit(
                title="Eiffel Tower",
                url_or_id="https://t.example/eiffel",
                snippet="A tower in Paris.",
                provider=self.name,
                date="2024",
            )
        ]


RELEASE_HITS = [
    {
        "id": 1,
        "title": "Eiffel Tower",
        "url": "https://t.example/eiffel",
        "snippet": "A tower in Paris.",
        "date": "2024",
    }
]


@pytest.fixture()
def hits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OMNILAB_WEB__SEARCH_PROVIDER", "local")
    get_settings.cache_clear()
    PROVIDERS.register("side-by-side", _Hits)
    yield
    PROVIDERS.unregister("side-by-side")
    get_settings.cache_clear()


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _replies() -> list[FakeReply]:
    fenced = '```json\n{"name": "web_search", "arguments": {"query": "x"}}\n```'
    return [
        # item 1 (image): a search, then two bad calls in one reply, then fenced JSON (an answer)
        reply_text(_call("web_search", {"query": "eiffel"}), reasoning_content="Search first."),
        reply_text(_call("nope", {}) + "\n" + _call("web_search", {})),
        reply_text(fenced),
        # item 2 (audio): a call without its argument, then reasoning and an empty reply
        reply_text(_call("code_executor", {})),
        reply_text("", reasoning_content="It says hi."),
        # item 3 (video): unknown tools until the turn limit, then the forced-final call
        reply_text(_call("nope", {"a": 1})),
        reply_text(_call("nope", {"a": 2})),
        reply_text(_call("nope", {"a": 3})),
        reply_text("<answer>hi</answer>"),
    ]


def _items(folder: Path) -> Path:
    media = folder / "media"
    for sub in ("images", "audios", "videos"):
        (media / sub).mkdir(parents=True)
    synth.make_image(media / "images" / "pic.png", text="hi", size=(64, 48))
    synth.make_audio(media / "audios" / "talk.wav", duration=1.0)
    synth.make_video(media / "videos" / "clip.mp4", duration=1.0, size=(64, 48), audio=False)
    inputs = [
        ("image", "images/pic.png"),
        ("audio", "audios/talk.wav"),
        ("video", "videos/clip.mp4"),
    ]
    items = [
        {
            "id": i,
            "question": f"What does input {i} say?",
            "answer": "hi",
            "omni_modal_input": [{"type": kind, "path": path}],
            "Level": "Easy",
        }
        for i, (kind, path) in enumerate(inputs)
    ]
    data = folder / "omnigaia.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    return data


async def _run_release(
    module: ModuleType, url: str, data: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    async def no_wait(_seconds: float) -> None:
        return None

    # The release sleeps a second between its three tries of a failing tool.
    monkeypatch.setattr(module.asyncio, "sleep", no_wait)
    module.STUB_RESULTS["web_search"] = RELEASE_HITS
    agent = module.QwenBaseAgent(api_key="EMPTY", model=MODEL, api_base_url=url, max_action_limit=3)
    outputs = []
    for item in json.loads(data.read_text(encoding="utf-8")):
        media = [
            {**m, "path": str(data.parent / "media" / m["path"])} for m in item["omni_modal_input"]
        ]
        result = await agent.run(item["question"], media_items=media)
        outputs.append(result["output"])
    await agent.close()
    return outputs


# -- the named divergences, each undone on the release's body ----------------------------------


def _content_form(content: Any) -> Any:
    """Gap "message content form": a text-only list of parts is one string."""
    if isinstance(content, list) and all(p.get("type") == "text" for p in content):
        return "\n".join(p["text"] for p in content)
    return content


def _audio_parts(part: dict[str, Any]) -> dict[str, Any]:
    """Gap "audio parts": audio_url data URLs as input_audio of the same bytes."""
    if part.get("type") != "audio_url":
        return part
    head, payload = part["audio_url"]["url"].split(",", 1)
    fmt = "wav" if "wav" in head else "mp3"
    return {"type": "input_audio", "input_audio": {"data": payload, "format": fmt}}


def _usage(message: dict[str, Any]) -> dict[str, Any]:
    """Gap "usage in assistant messages": the release's replies carry their token counts."""
    return {k: v for k, v in message.items() if k != "usage"}


def _named(body: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, list):
            content = [_audio_parts(p) for p in content]
        messages.append({**_usage(message), "content": _content_form(content)})
    return {**body, "messages": messages}


def _strip_media(value: Any) -> Any:
    """Data URLs shortened for a readable failure (their equality is checked separately)."""
    if isinstance(value, str) and value.startswith("data:") and len(value) > 80:
        return value[:40] + "..."
    if isinstance(value, dict):
        return {k: _strip_media(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_media(v) for v in value]
    return value


def test_the_release_loop_and_the_preset_send_the_same_requests(
    tmp_path: Path, hits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")  # the release's client; it builds the release's bodies
    preset = get_protocol("omnigaia-paper")
    for finding in ("message content form", "audio parts", "usage in assistant messages"):
        assert any(g.finding == finding and g.reason for g in preset.gaps)
    data = _items(tmp_path)
    module = _release()
    with FakeOpenAIServer() as theirs, FakeOpenAIServer() as ours:
        theirs.push(*_replies())
        ours.push(*_replies())
        outputs = asyncio.run(_run_release(module, theirs.base_url, data, monkeypatch))
        done = runner.invoke(
            app,
            [
                "eval", "omnigaia", "--data", str(data), "--model", f"vllm:{MODEL}@{ours.base_url}",
                "--protocol", "omnigaia-paper", "--search", "side-by-side", "--max-turns", "3",
                "--scorer", "answer_set", "-c", "1", "--no-cache", "--no-progress",
                "--out", str(tmp_path / "run"),
            ],
        )  # fmt: skip
        assert done.exit_code in (0, 3), (done.output, done.exception)
        release = [theirs.body(i) for i in range(len(theirs.chat_requests))]
        omnilab = [ours.body(i) for i in range(len(ours.chat_requests))]
    assert len(release) == len(omnilab) == 9
    for i, (a, b) in enumerate(zip(release, omnilab, strict=True)):
        a = _named(a)
        assert sorted(a) == sorted(b), (i, sorted(a), sorted(b))
        for field in a:
            assert _strip_media(a[field]) == _strip_media(b[field]), (i, field)
            assert a[field] == b[field], (i, field)  # media payloads byte for byte
    # the release's answers are the preset's (fenced JSON, reasoning, the forced final)
    assert outputs[0].startswith("```json") and outputs[1] == "<think>It says hi.</think>\n"
    assert outputs[2] == "<answer>hi</answer>"
    results = [
        json.loads(line)
        for line in (tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    by_id = {r["task_id"]: r for r in results}
    assert [by_id[str(i)]["prediction"] for i in range(3)] == outputs
    # every call read from the text counts, the bad ones included (the release counts them too)
    assert by_id["0"]["tool_calls"] == {"web_search": 2, "nope": 1}
    assert by_id["2"]["tool_calls"] == {"nope": 3}


def test_the_fixture_is_the_releases_prompts_and_schemas() -> None:
    module = _release()
    from omnilab.agents.templates import render
    from omnilab.agents.tir_release import release_tools_prompt

    assert render("omnigaia_base") == module.SYSTEM_PROMPT
    assert render("forced_final_base") == module.FORCED_FINAL_ANSWER_PROMPT
    agent = module.QwenBaseAgent.__new__(module.QwenBaseAgent)

    class _Spec:
        def __init__(self, function: dict[str, Any]) -> None:
            self.name = function["name"]
            self.description = function["description"]
            self.parameters = function["parameters"]

    class _Tool:
        def __init__(self, function: dict[str, Any]) -> None:
            self.spec = _Spec(function)

    tools = [_Tool(t["function"]) for t in module.OPENAI_TOOLS_SCHEMA]
    assert release_tools_prompt(tools) == agent._build_tools_prompt()  # type: ignore[arg-type]
