"""How the ``master`` agent under ``rules="release"`` runs the reasoning stage's plan, as
huawei-lin/Agent-Omni ``src/subagents/*_agent.py`` read it: an agent absent from the pool (or
without input, the text agent included) is skipped without a call and without a fixing call,
and an agent named twice answers only its last entry's questions."""

from __future__ import annotations

import json
from pathlib import Path

from test_master_kit import decision, model, plan, run_master
from test_master_release import ReleasePool, notes

from omnilab.agents.master import release
from omnilab.bench.protocols import get_protocol
from omnilab.media.synth import make_image


def test_plan_keeps_the_last_entry_and_skips_agents_that_cannot_run() -> None:
    instructions = [
        {"agent_name": "text_agent", "questions": ["first?"]},
        {"agent_name": "image_agent", "questions": ["absent?"]},
        {"agent_name": "text_agent", "questions": ["last?", "also last?"]},
        {"agent_name": "image_agent", "questions": ["again?"]},
    ]
    kept, skipped = release.plan(instructions, ["text_agent"])
    assert kept == {"text_agent": ["last?", "also last?"]}
    assert skipped == ["image_agent"]


def test_an_agent_absent_from_the_pool_is_skipped_without_a_fixing_call(tmp_path: Path) -> None:
    # image_agent on a text-only item: the release's image agent returns None, no call, no
    # retry; omnilab's own rules refuse the plan and ask again.
    reply = plan("time", image_agent=["What is in the picture?"], text_agent=["When?"])
    pool = ReleasePool(
        queues={
            "reasoning": [json.dumps(reply)],
            "decision": [json.dumps(decision("At noon.", True))],
        }
    )
    run = run_master(tmp_path, model(pool, "pool"), [notes(tmp_path)], "When is the meeting?",
                     rules="release", max_rounds=1, format_retries=9)  # fmt: skip
    assert run.trajectory.answer == "At noon." and not run.errors
    assert len(pool.calls("reasoning")) == 1
    assert not [m for m in pool.seen if m[-1].text.startswith("Instructions:")]  # no fixing call
    asked = [m[-1].text.rsplit("\n", 1)[-1] for m in pool.seen if m[0].role == "user"]
    assert "When?" in asked and "What is in the picture?" not in asked
    assert run.stats["skipped_agents"] == 1.0


def test_an_agent_named_twice_answers_only_its_last_entry(tmp_path: Path) -> None:
    reply = {
        "user_intent": "time",
        "agent_instructions": [
            {"agent_name": "text_agent", "questions": ["Dropped?"]},
            {"agent_name": "text_agent", "questions": ["Kept?"]},
        ],
    }
    pool = ReleasePool(
        queues={
            "reasoning": [json.dumps(reply)],
            "decision": [json.dumps(decision("At noon.", True))],
        }
    )
    run_master(tmp_path, model(pool, "pool"), [notes(tmp_path)], rules="release", max_rounds=1)
    asked = [m[-1].text.rsplit("\n", 1)[-1] for m in pool.seen if m[0].role == "user"]
    assert "Kept?" in asked and "Dropped?" not in asked
    deciding = pool.calls("decision")[0][0].text
    assert "'question': 'Kept?'" in deciding and "Dropped?" not in deciding


def test_without_text_input_the_text_agent_makes_no_call(tmp_path: Path) -> None:
    photo = make_image(tmp_path / "photo.png")
    reply = plan("what", text_agent=["Think about it?"], image_agent=["What is shown?"])
    pool = ReleasePool(
        queues={
            "reasoning": [json.dumps(reply)],
            "decision": [json.dumps(decision("A square.", True))],
        }
    )
    run = run_master(tmp_path, model(pool, "pool"), [photo], "What is shown?", rules="release",
                     max_rounds=1)  # fmt: skip
    asked = [m[-1].text.rsplit("\n", 1)[-1] for m in pool.seen if m[0].role == "user"]
    assert "What is shown?" in asked and "Think about it?" not in asked
    assert run.stats["skipped_agents"] == 1.0


def test_under_the_preset_only_the_text_agent_drops_a_think_part(tmp_path: Path) -> None:
    # utils.py postprocessing runs on the text agent's replies only; the image agent's reply
    # reaches the master as sent. Before, the model layer moved <think> out of every reply.
    photo = make_image(tmp_path / "photo.png")
    reply = plan("what", text_agent=["Read it?"], image_agent=["What is shown?"])
    pool = ReleasePool(
        queues={
            "reasoning": [json.dumps(reply)],
            "decision": [json.dumps(decision("A square.", True))],
            "agent": ["<think>Look closer.</think>\n\nA square."],
        }
    )
    options = get_protocol("agent-omni-paper").agent_options
    run_master(tmp_path, model(pool, "pool"), [photo, notes(tmp_path)], "What is shown?",
               rules="release", max_rounds=1, generate=options["generate"])  # fmt: skip
    deciding = pool.calls("decision")[0][0].text
    assert "'answer': '<think>Look closer.</think>\\n\\nA square.'" in deciding  # image
    assert "'answer': '\\n\\nA square.'" in deciding  # text: the block cut, the rest as is
