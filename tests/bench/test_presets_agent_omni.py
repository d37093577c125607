"""The ``agent-omni-paper`` preset: L = 3 master loops, the README's model params (temperature 0,
max_tokens 8192) on the wire, the release's structured calls (format instructions in the system
prompt, no response_format, LangChain's fixing prompt, then the call again, ``retry_times: 10``;
omnilab's default retries once); ``agent-omni-code-x``: the Code-X paper's run of it (two rounds,
max_tokens 4096, OmniGAIA's reference judge rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.agents import AgentConfigError, get_agent
from omnilab.bench.protocols import get_protocol
from omnilab.bench.scoring.judging import REFERENCE_RULES
from omnilab.cli.main import app
from omnilab.media import synth
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.trajectory import ErrorEvent, read_trajectory

runner = CliRunner()

PLAN = {
    "user_intent": "colour",
    "agent_instructions": [{"agent_name": "text_agent", "questions": ["Which colour?"]}],
}
DECISION = {
    "final_answer": "The answer is B",
    "is_final": True,
    "suggestions_for_next_round": ["none"],
}


def _eval(folder: Path, *extra: str) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """One MCQ item whose reasoning stage gets three replies that are not JSON before its plan;
    the requests, the result and the format errors of the run."""
    folder.mkdir(parents=True)
    item = {"id": "q0", "question": "Which colour is the sky?", "options": ["A. red", "B. blue"],
            "answer": "B"}  # fmt: skip
    data = folder / "mcq.jsonl"
    data.write_text(json.dumps(item) + "\n", encoding="utf-8")
    out = folder / "run"
    with FakeOpenAIServer(default=reply_text(json.dumps(DECISION))) as fake:
        fake.push(*(reply_text(f"not JSON {i}") for i in range(3)))
        fake.push(reply_text(json.dumps(PLAN)), reply_text(json.dumps({"answers": ["blue"]})))
        result = runner.invoke(
            app,
            [
                "eval", "mcq", "--data", str(data), "--agent", "master", "--model",
                f"vllm:pool@{fake.base_url}", "--out", str(out), "--no-cache", "--no-progress",
                *extra,
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        bodies = [fake.body(i) for i in range(len(fake.chat_requests))]
    (row,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    (path,) = [p for p in out.rglob("*.jsonl") if "traj" in str(p)]
    errors = [
        e.message
        for e in read_trajectory(path).events
        if isinstance(e, ErrorEvent) and e.error_kind == "format"
    ]
    return bodies, row, errors


def _text(content: str | list[dict[str, str]]) -> str:
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


def test_the_preset_loads_and_its_options_reach_the_agent() -> None:
    preset = get_protocol("agent-omni-paper")
    assert "huawei-lin/Agent-Omni" in preset.source and preset.agent == "master" and preset.gaps
    options = get_agent("master", **preset.agent_options).options  # type: ignore[attr-defined]
    assert (options.max_rounds, options.format_retries) == (3, 9)  # retry_times 10: ten tries
    assert (options.rules, options.all_rounds, options.format_instructions) == (
        "release",
        True,
        True,
    )
    assert preset.scorer == "mcq" and any(g.finding == "model pool" for g in preset.gaps)


def test_sampling_and_retries_on_the_wire(tmp_path: Path) -> None:
    bodies, row, errors = _eval(
        tmp_path / "preset", "--protocol", "agent-omni-paper", "-O", "all_rounds=false"
    )
    # reasoning: a bad reply, its fix (bad), the call again (bad), its fix (the plan); then the
    # decision: the plan's text agent has no text input, so it makes no call (the release's),
    # and the reply queued for it goes to the decision, which its fixing call repairs
    assert len(bodies) == 6 and not errors and row["score"]["correct"] is True
    assert _text(bodies[4]["messages"][0]["content"]).startswith("You are the Decision Module")
    assert _text(bodies[5]["messages"][0]["content"]).startswith("Instructions:")
    # the release's model configs for the master (Claude 3.7 Sonnet): 8192 tokens, no seed
    assert all((b["temperature"], b["max_tokens"]) == (0.0, 8192) for b in bodies)
    assert not any("seed" in b for b in bodies)
    assert not any("response_format" in b for b in bodies)  # the release sends none
    (system_part,) = bodies[0]["messages"][0]["content"]  # nodes.py: a list of one text part
    system = system_part["text"]
    assert "The output should be formatted as a JSON instance" in system
    assert "The user's goal or intention" in system  # the schema's descriptions
    fixes = [[_text(x["content"]) for x in b["messages"]] for b in (bodies[1], bodies[3])]
    assert all(len(m) == 1 and m[0].startswith("Instructions:\n----") for m in fixes)
    assert "not JSON 0" in fixes[0][0] and "Above, the Completion" in fixes[0][0]
    assert bodies[2]["messages"] == bodies[0]["messages"]  # the call again, from scratch
    # omnilab's rules and one retry: the reasoning reply is a format error
    bodies, row, errors = _eval(tmp_path / "default", "--protocol", "agent-omni-paper", "-O",
                                "format_retries=1", "-O", "rules=omnilab")  # fmt: skip
    assert errors and "MasterReasoningStructure" in errors[0] and "after 2 attempts" in errors[0]
    assert "response_format" in bodies[0]


def test_the_code_x_run_of_agent_omni_loads() -> None:
    preset = get_protocol("agent-omni-code-x")
    assert "Code-X paper Appendix H.3.1" in preset.source and preset.datasets == ["omnigaia"]
    options = get_agent("master", **preset.agent_options).options  # type: ignore[attr-defined]
    assert (options.max_rounds, options.format_retries) == (2, 10)
    assert preset.scoring_rules == REFERENCE_RULES and preset.gaps
    assert options.generate_for("video").max_tokens == 2048
    assert options.generate_for("master").max_tokens == 4096
    assert options.generate_for("video").temperature == 0.0  # the rest from generate
    with pytest.raises(AgentConfigError, match="no role vision"):
        get_agent("master", role_generate={"vision": {"max_tokens": 1}})


def _rounds(folder: Path, preset: str) -> list[dict[str, Any]]:
    """An MCQ item whose every decision asks for another round; the requests."""
    folder.mkdir(parents=True)
    item = {
        "id": "q0",
        "question": "Which colour?",
        "options": ["A. red", "B. blue"],
        "answer": "B",
    }
    data = folder / "mcq.jsonl"
    data.write_text(json.dumps(item) + "\n", encoding="utf-8")
    again = {**DECISION, "is_final": False}
    with FakeOpenAIServer(default=reply_text(json.dumps(again))) as fake:
        for _ in range(3):
            fake.push(reply_text(json.dumps(PLAN)), reply_text(json.dumps({"answers": ["blue"]})))
            fake.push(reply_text(json.dumps(again)))
        result = runner.invoke(
            app,
            [
                "eval", "mcq", "--data", str(data), "--model", f"vllm:pool@{fake.base_url}",
                "--scorer", "mcq", "--out", str(folder / "run"), "--no-cache", "--no-progress",
                "--protocol", preset,
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        return [fake.body(i) for i in range(len(fake.chat_requests))]


def test_rounds_and_tokens_of_both_presets_on_the_wire(tmp_path: Path) -> None:
    paper = _rounds(tmp_path / "paper", "agent-omni-paper")
    assert len(paper) == 9 and {b["max_tokens"] for b in paper} == {8192}  # L = 3
    code_x = _rounds(tmp_path / "code-x", "agent-omni-code-x")
    assert len(code_x) == 6 and {b["max_tokens"] for b in code_x} == {4096}  # two rounds


def test_the_video_agent_gets_its_own_sampling_on_the_wire(tmp_path: Path) -> None:
    clip = synth.make_video(tmp_path / "v.mp4", duration=1.0, fps=4, size=(64, 48), audio=False)
    item = {"id": "v", "question": "What is shown?", "options": ["A. a dog", "B. a counter"],
            "answer": "B", "video": str(clip)}  # fmt: skip
    data = tmp_path / "mcq.jsonl"
    data.write_text(json.dumps(item) + "\n", encoding="utf-8")
    plan = {"user_intent": "what", "agent_instructions": [
        {"agent_name": "video_agent", "questions": ["What is shown?"]}]}  # fmt: skip
    with FakeOpenAIServer(default=reply_text(json.dumps(DECISION))) as fake:
        fake.push(
            reply_text(json.dumps({"description": "a counter"})),
            reply_text(json.dumps(plan)),
            reply_text(json.dumps({"answers": ["a counter"]})),
        )
        result = runner.invoke(
            app,
            [
                "eval", "mcq", "--data", str(data), "--model", f"vllm:qwen-omni@{fake.base_url}",
                "--scorer", "mcq", "--protocol", "agent-omni-code-x", "--out",
                str(tmp_path / "run"), "--no-cache", "--no-progress",
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        bodies = [fake.body(i) for i in range(len(fake.chat_requests))]
    tokens = {b["response_format"]["json_schema"]["name"]: b["max_tokens"] for b in bodies}
    assert tokens == {
        "InputSummary": 2048,  # the video agent's perception
        "MasterReasoningStructure": 4096,
        "AgentAnswers": 2048,
        "MasterDecisionStructure": 4096,
    }
