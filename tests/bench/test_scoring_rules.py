"""OmniGAIA's strict (omnilab) and reference (the authors' eval_results.py) scoring rules: each
choice on scripted judge replies that the two rule sets score differently, both verdicts
recorded side by side, and the reference judge request on the wire."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

from omnilab.bench import AnswerSet, Task, TaskResult
from omnilab.bench.errors import BenchError
from omnilab.bench.metrics import pass_at_1_by_rules, summarize
from omnilab.bench.rescore import make_scorer
from omnilab.bench.scoring import OmniGaiaScorer
from omnilab.bench.scoring.base import last_words
from omnilab.bench.scoring.judging import (
    REFERENCE_RULES,
    ScoringRules,
    judge_input,
    reference_verdict,
)
from omnilab.bench.tables import summary_tables
from omnilab.models import Model, get_model
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.models.providers.scripted import error, text

T = TypeVar("T")
MakeModel = Callable[..., Model]

LABEL = "the treaty was signed in the city of Westphalia after thirty years of war in 1648 " * 2
LONG_SPAN = f"Some reasoning first. <answer>{LABEL.strip()} indeed</answer> That is my answer."
UNTAGGED = "After a long search I found it. The answer: 2 years"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def task(label: str) -> Task:
    return Task(id="t1", dataset="omnigaia", question="Q?", answers=AnswerSet(label=label))


def reference(judge: Model) -> OmniGaiaScorer:
    return OmniGaiaScorer(judge, rules=REFERENCE_RULES)


def test_judge_input_span_or_last_words(make_model: MakeModel) -> None:
    # A label over 20 words: the strict rules show the judge the last 20 words of the message
    # (cutting the answer), the reference rules the whole tag span.
    strict_judge, ref_judge = make_model([text("Correct")]), make_model([text("Correct")])
    strict = run(OmniGaiaScorer(strict_judge).score(task(LABEL), LONG_SPAN))
    ref = run(reference(ref_judge).score(task(LABEL), LONG_SPAN))
    assert strict.judge_input == last_words(LONG_SPAN, 20)
    assert ref.judge_input == f"{LABEL.strip()} indeed"
    asked = ref_judge.adapter.requests[0][0][0].text  # type: ignore[attr-defined]
    assert f"Model Predicted Answer: {LABEL.strip()} indeed\n" in asked
    assert judge_input("no tag here at all", REFERENCE_RULES) == "no tag here at all"


@pytest.mark.parametrize(
    ("reply", "strict", "lenient"),
    [
        ("Correct", True, True),
        ("Incorrect.", False, False),
        ("The prediction matches.", None, True),  # strict: undecided after asking again
        ("<think>Incorrect? no.</think>Correct", True, True),  # thinking is split off
        ("incorrect", False, True),  # the reference looks for "Incorrect" as written
    ],
)
def test_verdict_reading(
    make_model: MakeModel, reply: str, strict: bool | None, lenient: bool
) -> None:
    assert (reference_verdict(reply) == "correct") is lenient
    strict_judge = make_model([text(reply)] * 3)
    got = run(OmniGaiaScorer(strict_judge).score(task("2 years"), "<answer>two</answer>"))
    assert got.correct is strict
    ref_judge = make_model([text(reply)])
    ref = run(reference(ref_judge).score(task("2 years"), "<answer>two</answer>"))
    assert ref.correct is lenient
    assert len(ref_judge.adapter.requests) == 1  # type: ignore[attr-defined]


def test_exact_match_on_untagged_last_words(make_model: MakeModel) -> None:
    strict_judge = make_model([text("Incorrect")])
    strict = run(OmniGaiaScorer(strict_judge).score(task(UNTAGGED), UNTAGGED))
    assert (strict.exact_match, strict.correct) == (False, False)  # judged, and it said no
    no_call = make_model([])
    ref = run(reference(no_call).score(task(UNTAGGED), UNTAGGED))
    assert (ref.exact_match, ref.correct) == (True, True)
    assert no_call.adapter.requests == []  # type: ignore[attr-defined]
    # The switch alone, with the strict verdict reading:
    only_em = ScoringRules(em_untagged=True)
    assert run(
        OmniGaiaScorer(make_model([]), rules=only_em).score(task(UNTAGGED), UNTAGGED)
    ).correct


def test_the_reference_reads_only_the_lower_case_answer_tag(make_model: MakeModel) -> None:
    # Issue 43 point 15: eval_results.py's pattern has no IGNORECASE, so <ANSWER> is no tag and
    # the last 20 words stand for the answer (exact match fails on the tags around it).
    shouted = "I checked it. <ANSWER>2 years</ANSWER>"
    assert judge_input(shouted, REFERENCE_RULES) == shouted
    assert judge_input(shouted, ScoringRules(judge_input="answer-span")) == "2 years"
    strict = run(OmniGaiaScorer(make_model([])).score(task("2 years"), shouted))
    assert strict.exact_match  # omnilab's default reads any case
    ref = run(reference(make_model([text("Incorrect")])).score(task("2 years"), shouted))
    assert (ref.exact_match, ref.correct) == (False, False)
    assert REFERENCE_RULES.case_sensitive_tag and not ScoringRules().case_sensitive_tag


def test_a_failing_judge_is_undecided_strictly_and_wrong_by_the_reference(
    make_model: MakeModel,
) -> None:
    strict = run(
        OmniGaiaScorer(make_model([error(500, times=2)])).score(task("x"), "<answer>y</answer>")
    )
    ref = run(reference(make_model([error(500, times=2)])).score(task("x"), "<answer>y</answer>"))
    assert strict.correct is None and ref.correct is False


def test_both_verdicts_are_recorded_and_reported_side_by_side(make_model: MakeModel) -> None:
    # 1: both rules show the judge the same words; its first reply rambles: the strict rules
    #    ask again and get Incorrect, the reference reads the first reply as correct.
    one = run(
        OmniGaiaScorer(make_model([text("Looks right"), text("Incorrect")])).score(
            task("alpha"), "alpha beta"
        )
    )
    assert one.correct is False
    assert one.details["strict"] == 0.0 and one.details["reference"] == 1.0
    # 2: untagged text equal to the label: wrong-by-judge strictly, exact match by reference.
    two = run(OmniGaiaScorer(make_model([text("Incorrect")])).score(task(UNTAGGED), UNTAGGED))
    assert two.details["strict"] == 0.0 and two.details["reference"] == 1.0
    # 3: a long tagged answer: the judge saw the last words, the reference would show the span.
    three = run(OmniGaiaScorer(make_model([text("Correct")])).score(task(LABEL), LONG_SPAN))
    assert three.details["strict"] == 1.0 and three.details["reference"] is None
    results = [
        TaskResult(task_id=f"t{i}", dataset="omnigaia", prediction="p", score=s)
        for i, s in enumerate([one, two, three])
    ]
    results.append(TaskResult(task_id="t9", dataset="omnigaia", error="timeout"))
    rules = pass_at_1_by_rules(results)
    assert (rules["strict"].correct, rules["strict"].total) == (1, 4)
    assert (rules["reference"].correct, rules["reference"].total) == (2, 3)
    assert rules["reference"].undecided == 1
    summary = summarize(results, resamples=100)
    assert summary.rules == rules
    from rich.console import Console

    console = Console(width=140, record=True)
    for table in summary_tables(summary, label="run"):
        console.print(table)
    shown = console.export_text()
    assert "Pass@1 (reference rules)" in shown and "1 need their own judge call" in shown


def test_rules_for_a_scorer_that_takes_none_are_refused() -> None:
    with pytest.raises(BenchError, match="takes no scoring rules"):
        make_scorer("answer_set", rules=REFERENCE_RULES)


def test_the_reference_judge_request_on_the_wire() -> None:
    with FakeOpenAIServer(default=reply_text("Correct")) as server:
        judge = get_model(f"vllm:judge@{server.base_url}", cache=False)
        score = run(reference(judge).score(task("x"), "<answer>y</answer>"))
        body = server.body()
    assert score.correct is True
    assert body["max_tokens"] == 40960 and "temperature" not in body
    assert body["chat_template_kwargs"] == {"thinking": False}
