"""The deepsearch agent: the Appendix D prompt and schemas, one call per turn, the query-list
rule, per-tool budgets and their exhaustion, audio native or as a transcript, pictures of
results for vision models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentkit import ALL, TEXT_ONLY, VISION, scripted
from deepsearch_kit import build_indexes, clip, many, run_deepsearch, search

from omnilab.agents import AgentConfigError, get_agent
from omnilab.agents.deepsearch.tools import d_schemas
from omnilab.agents.templates import render
from omnilab.models.capabilities import Capabilities
from omnilab.models.providers.scripted import text
from omnilab.trajectory import AnswerEvent, RunStart, StepNote, ToolResultEvent

ROOT = Path(__file__).resolve().parents[2]
SPEECH = ROOT / "tests" / "data" / "speech" / "two_cities_part1.wav"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_indexes(tmp_path_factory.mktemp("ds"))


def results(run: object) -> list[ToolResultEvent]:
    return [e for e in run.saved.events if isinstance(e, ToolResultEvent)]  # type: ignore[attr-defined]


def notes(run: object, label: str) -> list[StepNote]:
    events = run.saved.events  # type: ignore[attr-defined]
    return [e for e in events if isinstance(e, StepNote) and e.label == label]


def test_system_prompt_and_tool_schemas_are_appendix_d(index: Path, tmp_path: Path) -> None:
    model, adapter = scripted([text("<answer>UNKNOWN</answer>")])
    run_deepsearch(model, [clip(tmp_path)], "Which town?", tmp_path, index_dir=index)
    messages, tools, _config = adapter.requests[0]
    system = messages[0].text
    assert system == render("deepsearch_inference")
    assert system.startswith("You are a Multimodal Investigative Agent.")
    assert "Call exactly ONE function per turn. Provide exactly ONE search query" in system
    assert "Example Turn 1 (Multiple Tracks):" in system
    by_name = {t.name: t for t in tools}
    assert {n: t.description for n, t in by_name.items()} == {
        "text_search": "Web search for facts.",
        "image_search_by_text_query": "Search images.",
        "video_search": "Search for videos and keyframes.",
    }
    for spec in tools:
        assert spec.parameters == d_schemas()[spec.name]["parameters"]
        assert spec.parameters["properties"] == {
            "query_list": {"type": "array", "items": {"type": "string"}}
        }


def test_one_call_per_turn_the_second_is_refused_and_not_run(index: Path, tmp_path: Path) -> None:
    model, _adapter = scripted(
        [
            many(("text_search", "Cape Lumen lighthouse"), ("video_search", "foghorn")),
            text("<answer>Port Ardent</answer>"),
        ]
    )
    run = run_deepsearch(model, [clip(tmp_path)], "Which town?", tmp_path, index_dir=index)
    first, second = results(run)
    assert first.result.ok and "Cape Lumen" in first.result.text
    assert second.result.error is not None and second.result.error.code == "TOO_MANY_CALLS"
    (budget,) = notes(run, "search budget")
    assert budget.data["used"] == {
        "text_search": 1,
        "image_search_by_text_query": 0,
        "video_search": 0,
    }


@pytest.mark.parametrize("queries", [("a lighthouse", "a bridge"), ()])
def test_query_list_rule_gives_an_actionable_error_and_costs_nothing(
    index: Path, tmp_path: Path, queries: tuple[str, ...]
) -> None:
    model, _ = scripted(
        [
            search("text_search", *queries),
            search("text_search", "lighthouse"),
            text("<answer>x</answer>"),
        ]
    )
    run = run_deepsearch(model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index, budget=(1, 1))
    refused, ran = results(run)
    assert refused.result.error is not None and refused.result.error.code == "INVALID_ARGS"
    assert "exactly one search query" in refused.result.error.message
    assert '{"query_list": ["your query"]}' in refused.result.error.message
    assert ran.result.ok  # the refused call did not use the only text search


def test_a_variant_may_allow_several_queries(index: Path, tmp_path: Path) -> None:
    model, _ = scripted([search("text_search", "lighthouse", "bridge"), text("<answer>x</answer>")])
    run = run_deepsearch(model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index, max_queries=2)
    (only,) = results(run)
    assert "Results for 'lighthouse'" in only.result.text and "bascule" in only.result.text


def test_budget_exhaustion_is_told_refused_and_recorded(index: Path, tmp_path: Path) -> None:
    model, _ = scripted(
        [
            search("text_search", "lighthouse"),
            search("text_search", "lighthouse town"),
            search("video_search", "foghorn"),
            text("<answer>Port Ardent</answer>"),
        ]
    )
    run = run_deepsearch(
        model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index, budget=(1, 3), budget_scope="tool"
    )
    first, second, video = results(run)
    assert "this was your last text_search call (1 of 1 used)" in first.result.text
    assert second.result.error is not None and second.result.error.code == "TOOL_BUDGET"
    assert video.result.ok
    (budget,) = notes(run, "search budget")
    assert budget.data["exhausted"] == ["text_search"]
    assert budget.data["refused"] == 1
    assert budget.data["limits"]["video_search"] == 3


def test_when_every_budget_is_spent_the_model_must_answer(index: Path, tmp_path: Path) -> None:
    model, adapter = scripted(
        [search("text_search", "lighthouse"), text("<answer>Port Ardent</answer>")]
    )
    run = run_deepsearch(
        model,
        [clip(tmp_path)],
        "Q?",
        tmp_path,
        index_dir=index,
        budget=(1, 0),
        tools=["text_search"],
    )
    messages, _tools, config = adapter.requests[-1]
    assert config.tool_choice == "none"
    assert "Every search budget is spent." in messages[-1].text
    (answer,) = [e for e in run.saved.events if isinstance(e, AnswerEvent)]
    assert answer.answer == "Port Ardent" and answer.forced


@pytest.mark.parametrize(("budget", "text_n", "video_n"), [((5, 1), 5, 1), ((15, 5), 15, 5)])
def test_budgets_of_the_papers_study_are_configurable(
    index: Path, tmp_path: Path, budget: tuple[int, int], text_n: int, video_n: int
) -> None:
    agent = get_agent("deepsearch", budget=list(budget))
    assert agent.limits() == {  # type: ignore[attr-defined]
        "text_search": text_n,
        "image_search_by_text_query": text_n,
        "video_search": video_n,
    }
    model, _ = scripted([text("<answer>x</answer>")])
    run = run_deepsearch(
        model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index, budget=budget, budget_scope="tool"
    )
    (start,) = [e for e in run.saved.events if isinstance(e, RunStart)]
    assert start.config["tool_budgets"]["video_search"] == video_n


def _alternating(n: int, tools: tuple[str, ...]) -> list[object]:
    return [search(tools[i % len(tools)], f"lighthouse {i}") for i in range(n)]


def test_a_text_task_gets_10_searches_in_total_by_default(index: Path, tmp_path: Path) -> None:
    # Table 3's (10, 3): 10 searches over all tools for a text task, not 10 per tool.
    steps = _alternating(12, ("text_search", "image_search_by_text_query"))
    model, adapter = scripted([*steps[:10], text("<answer>Port Ardent</answer>")])
    run = run_deepsearch(model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index)
    ran = [r for r in results(run) if r.result.error is None]
    assert len(ran) == 10 and len(adapter.requests) == 11
    (budget,) = notes(run, "search budget")
    assert budget.data["shared"] == 10 and sum(budget.data["used"].values()) == 10
    # then the final call (omnilab's default on exhaustion): tools off, the answer is kept
    assert adapter.requests[-1][2].tool_choice == "none"
    assert run.saved.answer == "Port Ardent"


def test_a_video_task_gets_3_searches_in_total(index: Path, tmp_path: Path) -> None:
    steps = _alternating(3, ("video_search", "text_search", "image_search_by_text_query"))
    model, adapter = scripted([*steps, text("<answer>Cape Lumen</answer>")])
    run = run_deepsearch(
        model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index, category="video/ambient"
    )
    assert len([r for r in results(run) if r.result.error is None]) == 3
    assert "this task allows" not in results(run)[-1].result.text
    assert "(3 of 3 used)" in results(run)[-1].result.text  # the last search says so
    assert adapter.requests[-1][2].tool_choice == "none" and run.saved.answer == "Cape Lumen"


def test_on_exhausted_end_ends_the_run_without_an_answer(index: Path, tmp_path: Path) -> None:
    steps = _alternating(4, ("video_search", "text_search"))
    model, adapter = scripted(steps)
    run = run_deepsearch(
        model,
        [clip(tmp_path)],
        "Q?",
        tmp_path,
        index_dir=index,
        category="video/ambient",
        on_exhausted="end",
    )
    done = results(run)
    assert len(done) == 4 and done[-1].result.error is not None
    assert done[-1].result.error.code == "TOOL_BUDGET"
    # no forced final answer: 4 calls, each with tools on; the run ends as a budget exhaustion
    assert len(adapter.requests) == 4
    assert all(r[2].tool_choice != "none" for r in adapter.requests)
    assert run.saved.answer is None and run.saved.status == "budget"
    (end,) = notes(run, "exit")
    assert "past the budget" in end.text


def test_on_exhausted_end_still_takes_an_answer_after_the_last_search(
    index: Path, tmp_path: Path
) -> None:
    steps = _alternating(3, ("video_search",))
    model, adapter = scripted([*steps, text("<answer>Cape Lumen</answer>")])
    run = run_deepsearch(
        model,
        [clip(tmp_path)],
        "Q?",
        tmp_path,
        index_dir=index,
        category="video/ambient",
        on_exhausted="end",
    )
    assert run.saved.answer == "Cape Lumen" and not run.saved.final.forced  # type: ignore[union-attr]
    assert all(r[2].tool_choice != "none" for r in adapter.requests)


def test_on_exhausted_last_search_ends_the_run_when_the_last_search_has_run(
    index: Path, tmp_path: Path
) -> None:
    # Issue 43 point 30 (Appendix A: "By Turn 10 ... terminates by outputting a JSON
    # tool-call"): no model call after the budget's last search, so a reply that would have
    # answered is never asked for.
    steps = _alternating(3, ("video_search", "text_search"))
    model, adapter = scripted([*steps, text("<answer>Cape Lumen</answer>")])
    run = run_deepsearch(
        model,
        [clip(tmp_path)],
        "Q?",
        tmp_path,
        index_dir=index,
        category="video/ambient",
        on_exhausted="last_search",
    )
    assert len(adapter.requests) == 3
    assert [r.result.error for r in results(run)] == [None, None, None]
    assert run.saved.answer is None and run.saved.status == "budget"
    (end,) = notes(run, "exit")
    assert "last search of the budget" in end.text


def test_on_exhausted_last_search_keeps_an_answer_given_within_the_budget(
    index: Path, tmp_path: Path
) -> None:
    steps = _alternating(2, ("video_search",))
    model, adapter = scripted([*steps, text("<answer>Cape Lumen</answer>")])
    run = run_deepsearch(
        model,
        [clip(tmp_path)],
        "Q?",
        tmp_path,
        index_dir=index,
        category="video/ambient",
        on_exhausted="last_search",
    )
    assert len(adapter.requests) == 3 and run.saved.answer == "Cape Lumen"


def test_the_repeat_notice_is_omnilabs_and_the_preset_turns_it_off(
    index: Path, tmp_path: Path
) -> None:
    notice = "with exactly these arguments"
    steps = [search("text_search", "lighthouse")] * 3 + [text("<answer>x</answer>")]
    model, _ = scripted(steps)
    on = run_deepsearch(model, [clip(tmp_path)], "Q?", tmp_path / "on", index_dir=index)
    assert notice in results(on)[2].result.text
    model, _ = scripted(steps)
    off = run_deepsearch(
        model, [clip(tmp_path)], "Q?", tmp_path / "off", index_dir=index, repeat_notice=False
    )
    assert all(notice not in r.result.text for r in results(off))


def test_default_budget_is_table_3() -> None:
    assert get_agent("deepsearch").limits() == {  # type: ignore[attr-defined]
        "text_search": 10,
        "image_search_by_text_query": 10,
        "video_search": 3,
    }


def test_audio_is_native_for_audio_models(index: Path, tmp_path: Path) -> None:
    model, adapter = scripted([text("<answer>x</answer>")], caps=ALL)
    run_deepsearch(model, [SPEECH], "Who reads?", tmp_path, index_dir=index)
    user = adapter.requests[0][0][1]
    assert [p.type for p in user.content].count("audio") == 1


def test_audio_is_a_transcript_with_events_for_other_models(index: Path, tmp_path: Path) -> None:
    model, adapter = scripted([text("<answer>x</answer>")], caps=VISION)
    run_deepsearch(model, [SPEECH], "Who reads?", tmp_path, index_dir=index)
    user = adapter.requests[0][0][1]
    assert "audio" not in [p.type for p in user.content]
    said = user.text
    assert "It was the best of times" in said
    assert "Audio events" in said and "speech" in said


def test_native_audio_refused_for_a_model_without_audio(index: Path, tmp_path: Path) -> None:
    model, _ = scripted([text("x")], caps=TEXT_ONLY)
    with pytest.raises(AgentConfigError, match="native"):
        run_deepsearch(model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index, audio="native")


@pytest.mark.parametrize(("caps", "images"), [(VISION, 1), (Capabilities(audio=True), 0)])
def test_result_pictures_reach_vision_models_as_images(
    index: Path, tmp_path: Path, caps: Capabilities, images: int
) -> None:
    model, adapter = scripted(
        [search("image_search_by_text_query", "Cape Lumen lighthouse"), text("<answer>x</answer>")],
        caps=caps,
    )
    run_deepsearch(model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index)
    tool_message = adapter.requests[1][0][-1]
    kinds = [p.type for p in tool_message.content]
    assert kinds.count("image") == images
    assert "Cape Lumen lighthouse" in tool_message.text


@pytest.mark.parametrize(("keyframes", "tiles"), [(16, 16), (1, 1)])
def test_video_results_show_keyframes_of_the_passage(
    index: Path, tmp_path: Path, keyframes: int, tiles: int
) -> None:
    # Appendix D: "Search for videos and keyframes"; §3.2: about 16 keyframes to verify.
    from PIL import Image

    from omnilab.tools.mediasearch.keyframes import KEYFRAME_EDGE

    model, adapter = scripted(
        [search("video_search", "foghorn"), text("<answer>x</answer>")], caps=VISION
    )
    run_deepsearch(model, [clip(tmp_path)], "Q?", tmp_path, index_dir=index, keyframes=keyframes)
    tool_message = adapter.requests[1][0][-1]
    [picture] = [p for p in tool_message.content if p.type == "image"]
    with Image.open(picture.path) as image:  # type: ignore[union-attr]
        # A 4x4 sheet of 256 px tiles is over 1024 px wide; the poster frame at most 512.
        assert (image.width >= 4 * KEYFRAME_EDGE) == (tiles > 1), image.size
    assert ("keyframes" in str(picture.path)) == (tiles > 1)  # type: ignore[union-attr]


def test_bad_options_are_one_line_errors() -> None:
    with pytest.raises(AgentConfigError, match="bad deepsearch option budget"):
        get_agent("deepsearch", budget="lots")
    with pytest.raises(AgentConfigError, match="index_dir applies to the local"):
        get_agent("deepsearch", search="serper", index_dir="x")._searcher()  # type: ignore[attr-defined]
    with pytest.raises(AgentConfigError, match="unknown"):
        get_agent("deepsearch", search="bing")._searcher()  # type: ignore[attr-defined]


def test_tools_json_names_its_source() -> None:
    data = json.loads((ROOT / "src/omnilab/agents/deepsearch/tools_d.json").read_text("utf-8"))
    assert "Appendix D" in data["_source"]


def test_gate_check_refusals_use_no_budget() -> None:
    from omnilab.agents.workers import ToolGate
    from omnilab.models.types import ToolCall
    from omnilab.tools.base import ToolResult

    def no_empty(call: ToolCall) -> ToolResult | None:
        return ToolResult.fail("INVALID_ARGS", "empty") if not call.arguments else None

    gate = ToolGate(tool_budgets={"t": 1}, check=no_empty)
    refused = gate.admit([ToolCall(name="t", arguments={})])[0]
    assert refused is not None and refused.error is not None
    assert refused.error.code == "INVALID_ARGS" and gate.uses == {}
    assert gate.admit([ToolCall(name="t", arguments={"a": 1})]) == [None]
    budget = gate.admit([ToolCall(name="t", arguments={"a": 2})])[0]
    assert budget is not None and budget.error is not None and budget.error.code == "TOOL_BUDGET"
