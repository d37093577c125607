"""The ``master`` agent's structured stages as Agent-Omni's released code runs them, with
scripted pools: the output parser's format instructions in the reasoning and decision system
prompts (always), and under ``rules="release"`` the release's prompt texts and variable
rendering, per-question free-text calls, the fixing prompt, and ``all_rounds``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from test_master_kit import DECISION, REASONING, StageModel, decision, model, plan, run_master

from omnilab.agents.master import release
from omnilab.agents.master.schemas import MasterDecisionStructure, reasoning_structure
from omnilab.agents.templates import render
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec

TEXT_POOL = "    - [text_agent]: text agent is processed by a language model."


def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("The meeting is at noon.", encoding="utf-8")
    return path


@dataclass
class ReleasePool(StageModel):
    """Answers as the release's stages are asked: by the system prompt (reasoning, decision),
    the fixing prompt, else a modality agent's free-text question."""

    queues: dict[str, list[str]] = field(default_factory=dict)
    seen: list[list[Message]] = field(default_factory=list)

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        assert config.response_format is None, "the release sends no response_format"
        self.seen.append(list(messages))
        system = messages[0].text if messages[0].role == "system" else ""
        last = messages[-1].text
        kind = (
            "reasoning"
            if system.startswith("You are the Reasoning Module")
            else "decision"
            if system.startswith("You are the Decision Module")
            else "fix"
            if last.startswith("Instructions:\n--------------")
            else "agent"
        )
        queue = self.queues.get(kind)
        if queue:
            return ModelOutput.from_text(queue.pop(0) if len(queue) > 1 else queue[0])
        question = last.rsplit("\n", 1)[-1]
        return ModelOutput.from_text(f"{self.endpoint} says: {question}")

    def calls(self, kind: str) -> list[list[Message]]:
        starts = {"reasoning": "You are the Reasoning", "decision": "You are the Decision"}
        return [
            m for m in self.seen if m[0].role == "system" and m[0].text.startswith(starts[kind])
        ]


def test_reasoning_and_decision_prompts_carry_the_format_instructions(tmp_path: Path) -> None:
    master = StageModel()
    run_master(tmp_path, model(master, "master"), [notes(tmp_path)], "When is the meeting?")
    (reasoning,) = master.stage(REASONING)
    (deciding,) = master.stage(DECISION)
    for request, field_text in (
        (reasoning, "The user's goal or intention, typically inferred"),
        (deciding, "Indicates whether this is a complete and final answer"),
    ):
        system = request.messages[0].text
        assert "\n\nThe output should be formatted as a JSON instance that conforms" in system
        assert field_text in system  # the schema's field descriptions reach the model
        assert request.config.response_format is not None  # omnilab also constrains decoding
    instructions = release.format_instructions(MasterDecisionStructure.model_json_schema())
    assert deciding.messages[0].text.endswith(instructions)
    assert '"title"' in instructions and not instructions.split("```")[1].startswith('\n{"title"')
    # off: the schema goes as response_format alone
    master = StageModel()
    run_master(tmp_path / "off", model(master, "m"), [notes(tmp_path)], format_instructions=False)
    assert "The output should be formatted" not in master.stage(REASONING)[0].messages[0].text


def test_the_release_prompts_variables_and_per_question_calls(tmp_path: Path) -> None:
    q1, q2 = "When is the meeting?", "Where is the meeting?"
    pool = ReleasePool(
        queues={
            "reasoning": [json.dumps(plan("time", text_agent=[q1, q2]))],
            "decision": [json.dumps(decision("At noon.", False, "check the room"))],
        }
    )
    run = run_master(
        tmp_path,
        model(pool, "pool"),
        [notes(tmp_path)],
        "When is the meeting?",
        rules="release",
        max_rounds=2,
    )
    assert run.trajectory.answer == "At noon."
    # perception: one free-text summary per modality, asked as the release asks it
    summary = f"pool says: {release.text('summary.text')}"
    first = pool.calls("reasoning")[0]
    schema = reasoning_structure(TEXT_POOL, release=True).model_json_schema()
    expected = render(
        "master_release_reasoning",
        cur_round_num=1,
        historical_message="",
        input_summaries=f"    - [text]: {summary}",
        available_agent_info=TEXT_POOL,
    )
    assert first[0].text == expected + "\n\n" + release.format_instructions(schema)
    assert "1. This is the 1 round of reasoning." in first[0].text
    assert "that are most suitable for handling this intent" in first[0].text  # nodes.py
    assert first[1].text == "When is the meeting?"
    # execution: one call per sub-question, the question alone after the notes, no system prompt
    agent_calls = [
        m for m in pool.seen if m[0].role != "system" and (q1 in m[-1].text or q2 in m[-1].text)
    ]
    asked = [m[-1].text.rsplit("\n", 1)[-1] for m in agent_calls if m[0].role == "user"]
    assert asked.count(q1) == 2 and asked.count(q2) == 2  # two rounds, one call each
    assert all(len(m) == 1 for m in agent_calls)  # the text agent has no system prompt
    # round 2 sees round 1's answers and decision as the release prints them
    second = pool.calls("reasoning")[1][0].text
    assert "1. This is the 2 round of reasoning." in second
    memory = [
        {"question": q1, "answer": f"pool says: {q1}"},
        {"question": q2, "answer": f"pool says: {q2}"},
    ]
    assert f"    - Memory from text agent: {[memory]}" in second
    said = {
        "final_answer": "At noon.",
        "is_final": False,
        "suggestions_for_next_round": ["check the room"],
    }
    assert f"    - Suggestion from previous round: {[said]}" in second
    deciding = pool.calls("decision")[1][0].text
    assert "1. This is the 2 round of decision." in deciding
    assert f"    - Memory from text agent: {[memory, memory]}" in deciding


def test_all_rounds_runs_every_round_whatever_is_final(tmp_path: Path) -> None:
    master = StageModel(replies={DECISION: [decision("At noon.", True)]})
    run = run_master(tmp_path, model(master, "m"), [notes(tmp_path)], all_rounds=True)
    assert len(master.stage(DECISION)) == 3 and run.stats["rounds"] == 3.0
    assert run.trajectory.answer == "At noon."


def test_an_unparsable_reply_is_fixed_then_asked_again(tmp_path: Path) -> None:
    good = json.dumps(plan("time", text_agent=["When?"]))
    pool = ReleasePool(
        queues={
            "reasoning": ["no json here", "still none", good],
            "fix": ["not fixed", "not fixed either", good],
            "decision": [json.dumps(decision("At noon.", True))],
        }
    )
    run = run_master(tmp_path, model(pool, "pool"), [notes(tmp_path)], rules="release", format_retries=2,
                     max_rounds=1)  # fmt: skip
    assert run.trajectory.answer == "At noon." and not run.errors
    fixes = [m for m in pool.seen if m[-1].text.startswith("Instructions:")]
    assert len(fixes) == 2 and all(len(m) == 1 for m in fixes)  # the fixing prompt alone
    assert "Completion:\n--------------\nno json here\n--------------" in fixes[0][0].text
    assert fixes[0][0].text.endswith("constraints laid out in the Instructions:")
    # each new attempt is the same call from scratch
    tries = pool.calls("reasoning")
    assert len(tries) == 3 and all(t == tries[0] for t in tries)
