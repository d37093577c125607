"""The ``omniagent-release`` scorer's FF items: the release's own consistency judge
(``verl/utils/reward_score/omni_agent.py``): its prompt with seven in-context examples, the
binary ``Judgement:`` reading, and reward 0 for answers of 1,000 characters or more."""

from __future__ import annotations

import asyncio

import pytest

from omnilab.bench.scoring.omniagent_ff import ff_reward
from omnilab.bench.scoring.registry import SCORERS
from omnilab.bench.task import AnswerSet, Task, TaskMetadata
from omnilab.bench.templates import render
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.registry import get_model


def ff_task() -> Task:
    return Task(id="f", dataset="omniagent", question="What colour is the towel?",
                answers=AnswerSet(label="The towel is blue."),
                metadata=TaskMetadata(task_type="FF"))  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "predicted", "reward"),
    [
        ("Judgement: 1", "blue", 1.0),
        ("Judgement: 0", "blue", 0.0),
        ("I think so.\nJudgement: 1", "blue", 1.0),  # the text after the last Judgement:
        ("1", "blue", 1.0),  # no Judgement: only exactly "1"
        ("1.", "blue", 0.0),
        ("Judgement: maybe", "blue", 0.0),
        ("Judgement: 1", "b" * 999, 1.0),
        ("Judgement: 1", "b" * 1000, 0.0),  # the long-answer guard
    ],
)
def test_the_release_reads_the_judgement(reply: str, predicted: str, reward: float) -> None:
    assert ff_reward(reply, predicted) == reward


def test_the_prompt_is_the_release_text() -> None:
    prompt = render("omniagent_ff_judge", question="Q?", standard="S.", predicted="P")
    assert prompt.startswith("\nBelow are two answers to a question. Question is [Question]")
    assert prompt.count("Judgement: 1") == 5 and prompt.count("Judgement: 0") == 2
    assert prompt.endswith(
        "\n[Question]: Q?\n[Standard Answer]: S.\n[Model_answer] : P\nJudgement:"
    )
    assert "Just output Judement and don't output anything else.\n\n\n\n" in prompt


def test_the_preset_scorer_asks_the_release_judge_without_sampling_settings() -> None:
    with FakeOpenAIServer(default=reply_text("Judgement: 1")) as fake:
        judge = get_model(f"vllm:judge@{fake.base_url}", cache=False).bound(seed=3)
        scorer = SCORERS.get("omniagent-release").build([judge])
        score = asyncio.run(scorer.score(ff_task(), "  blue  "))
        body = fake.body(0)
    assert score.correct is True and score.value == 1.0 and score.scorer == "omniagent-ff"
    (message,) = body["messages"]
    assert message["content"] == render(
        "omniagent_ff_judge",
        question="What colour is the towel?",
        standard="The towel is blue.",
        predicted="blue",
    )
    assert not {"seed", "temperature", "top_p", "max_tokens"} & set(body)
