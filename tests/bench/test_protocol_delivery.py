"""``--search PROVIDER`` on ``omnilab eval`` and ``omnilab ask`` (issue 20 scope 4, issue 16):
the run's web_search goes to that provider, run.json and the header record it, the offline-corpus
warning goes away, and the presets list a run that searches elsewhere than the reference."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_protocols import omnigaia_file
from typer.testing import CliRunner

from omnilab.bench.errors import BenchError
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import new_config
from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.errors import OmnilabError
from omnilab.media import synth
from omnilab.tools.web.providers import PROVIDERS
from omnilab.tools.web.types import SearchHit

runner = CliRunner()


class Recording:
    """A search provider that remembers each query (and answers one hit)."""

    queries: list[str] = []  # noqa: RUF012  (shared on purpose: the run builds its own)
    name = "recording"

    async def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        Recording.queries.append(query)
        return [
            SearchHit(title="T", url_or_id="https://t.example", snippet="s", provider=self.name)
        ]


@pytest.fixture()
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[Recording]]:
    monkeypatch.setenv("OMNILAB_WEB__SEARCH_PROVIDER", "local")
    get_settings.cache_clear()
    Recording.queries = []
    PROVIDERS.register("recording", Recording)
    yield Recording
    PROVIDERS.unregister("recording")


def script(folder: Path, *steps: object) -> Path:
    path = folder / "model.json"
    path.write_text(json.dumps({"outputs": list(steps), "repeat": True}), encoding="utf-8")
    return path


def eval_args(tmp_path: Path, model: Path, *extra: str) -> list[str]:
    data = omnigaia_file(tmp_path, n=1)
    return [
        "eval", "omnigaia", "--data", str(data), "--model", f"scripted:{model}",
        "--scorer", "answer_set", "--out", str(tmp_path / "run"), "--no-progress", *extra,
    ]  # fmt: skip


SEARCH_THEN_ANSWER = (
    {"tool_call": {"name": "web_search", "arguments": {"query": "eiffel tower"}}},
    "<answer>hi</answer>",
)


def test_eval_search_routes_web_search_and_is_recorded(
    tmp_path: Path, recording: type[Recording]
) -> None:
    model = script(tmp_path, *SEARCH_THEN_ANSWER)
    result = runner.invoke(app, eval_args(tmp_path, model, "--search", "recording"))
    assert result.exit_code == 0, result.output
    assert recording.queries == ["eiffel tower"]
    assert "web search: recording (--search)" in result.output
    assert "offline corpus" not in result.output  # a real provider was chosen
    stored = RunDir(tmp_path / "run").read_config()
    assert stored.search == "recording"
    assert stored.header is not None and stored.header["search"] == "recording (--search)"


def test_eval_without_search_uses_the_setting_and_warns(
    tmp_path: Path, recording: type[Recording]
) -> None:
    model = script(tmp_path, *SEARCH_THEN_ANSWER)
    result = runner.invoke(app, eval_args(tmp_path, model))
    assert result.exit_code == 0, result.output
    assert recording.queries == []  # the bundled corpus answered
    assert "web search: local (web.search_provider)" in result.output
    assert "warning: web_search runs on the small bundled offline corpus" in result.output
    assert RunDir(tmp_path / "run").read_config().search is None


def test_search_local_keeps_the_warning(tmp_path: Path, recording: type[Recording]) -> None:
    model = script(tmp_path, "<answer>hi</answer>")
    result = runner.invoke(app, eval_args(tmp_path, model, "--search", "local"))
    assert result.exit_code == 0, result.output
    assert "web search: local (--search)" in result.output
    assert "offline corpus" in result.output


def test_resume_keeps_the_runs_search(tmp_path: Path, recording: type[Recording]) -> None:
    model = script(tmp_path, *SEARCH_THEN_ANSWER)
    first = runner.invoke(app, eval_args(tmp_path, model, "--search", "recording", "--limit", "1"))
    assert first.exit_code == 0, first.output
    args = ["eval", "--out", str(tmp_path / "run"), "--resume", "--no-progress"]
    resumed = runner.invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    assert RunDir(tmp_path / "run").read_config().search == "recording"
    refused = runner.invoke(app, [*args, "--search", "local"])
    assert isinstance(refused.exception, BenchError)
    assert "search: recording (stored) vs local (now)" in str(refused.exception)


@pytest.mark.parametrize("command", ["eval", "ask"])
def test_unknown_provider_is_a_one_line_error(tmp_path: Path, command: str) -> None:
    if command == "eval":
        args = eval_args(tmp_path, script(tmp_path, "x"), "--search", "bingo")
    else:
        args = ["ask", "--search", "bingo", "--model", "scripted:x.json", "What?"]
    result = runner.invoke(app, args)
    # omnilab.cli.main prints an OmnilabError as one line (error: ...) and exits with 1.
    assert isinstance(result.exception, OmnilabError), result.output
    message = str(result.exception)
    assert "unknown search provider 'bingo'" in message and "serper" in message
    assert "\n" not in message


def preset_run(tmp_path: Path, folder: str, *extra: str) -> str:
    model = script(tmp_path, "<answer>hi</answer>")
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"outputs": ["Correct"], "repeat": True}), encoding="utf-8")
    data = tmp_path / "omnigaia.json"
    if not data.exists():
        omnigaia_file(tmp_path, n=1)
    args = [
        "eval", "omnigaia", "--data", str(data), "--model", f"scripted:{model}",
        "--judge", f"scripted:{judge}", "--protocol", "omnigaia-paper",
        "--out", str(tmp_path / folder), "--no-progress", *extra,
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_preset_lists_a_search_other_than_the_references(
    tmp_path: Path, recording: type[Recording]
) -> None:
    output = preset_run(tmp_path, "run1")
    assert "differs from the preset: search: local (preset serper: --search serper)" in output
    assert "not reproduced yet: web search" not in output
    output = preset_run(tmp_path, "run2", "--search", "serper")
    assert not [line for line in output.splitlines() if "differs from the preset: search" in line]
    assert "web search: serper (--search)" in output
    assert "offline corpus" not in output


def test_ask_search_routes_web_search(tmp_path: Path, recording: type[Recording]) -> None:
    image = synth.make_image(tmp_path / "pic.png", size=(32, 32))
    model = script(tmp_path, *SEARCH_THEN_ANSWER)
    args = [
        "ask", str(image), "Where?", "--model", f"scripted:{model}", "--search", "recording",
        "--out", str(tmp_path / "ask"), "--tools", "web_search",
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert recording.queries == ["eiffel tower"]
    assert "web search: recording (--search)" in result.output


def test_protocols_command_shows_the_references_search() -> None:
    shown = runner.invoke(app, ["protocols", "omnigaia-paper"])
    assert shown.exit_code == 0, shown.output
    assert "search = serper (pass --search serper)" in shown.output
    assert "not reproduced yet web search" not in shown.output
    assert "agent_options.delivery.frames_fps = 2" in shown.output


def test_api_ask_takes_search(tmp_path: Path, recording: type[Recording]) -> None:
    import omnilab

    image = synth.make_image(tmp_path / "pic.png", size=(32, 32))
    model = script(tmp_path, *SEARCH_THEN_ANSWER)
    result = omnilab.ask(
        [image],
        "Where?",
        model=f"scripted:{model}",
        tools=["web_search"],
        search="recording",
        run_dir=tmp_path / "api",
    )
    assert result.answer == "hi" and recording.queries == ["eiffel tower"]
    with pytest.raises(OmnilabError, match="unknown search provider 'bingo'"):
        omnilab.ask([image], "Where?", model=f"scripted:{model}", search="bingo")


def test_search_reaches_an_agent_with_its_own_search_option(tmp_path: Path) -> None:
    data = omnigaia_file(tmp_path, n=1)
    config = new_config(
        "omnigaia", data, agent="deepsearch", model="scripted:x", search="serper",
        scorer="answer_set",
    )  # fmt: skip
    assert config.agent_options["search"] == "serper" and config.search == "serper"
    kept = new_config(
        "omnigaia", data, agent="deepsearch", model="scripted:x", search="serper",
        agent_options={"search": "local"}, scorer="answer_set",
    )  # fmt: skip
    assert kept.agent_options["search"] == "local"
    tir = new_config("omnigaia", data, agent="tir", model="scripted:x", search="serper",
                     scorer="answer_set")  # fmt: skip
    assert "search" not in tir.agent_options


def test_ask_search_reaches_the_deepsearch_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `ask --agent deepsearch --search serper` searches with Serper, not the local sample.
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    clip = synth.make_audio(tmp_path / "clip.wav", duration=0.5, sample_rate=16_000)
    model = script(
        tmp_path,
        {"tool_call": {"name": "text_search", "arguments": {"query_list": ["festival"]}}},
        "<answer>x</answer>",
    )
    args = [
        "ask", str(clip), "Which city?", "--agent", "deepsearch", "--model", f"scripted:{model}",
        "--search", "serper", "--out", str(tmp_path / "ask"),
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "MISSING_KEY: serper search needs an API key" in result.output  # Serper was asked
    local = runner.invoke(app, [*args[:-3], "local", "--out", str(tmp_path / "ask2")])
    assert local.exit_code == 0 and "MISSING_KEY" not in local.output, local.output
