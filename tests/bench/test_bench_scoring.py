"""Scorers against hand-computed cases; the judge path through the scripted model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from omnilab.bench import (
    AnswerSet,
    AnswerSetMatch,
    BenchError,
    LLMJudge,
    MajorityVote,
    MeanRelativeAccuracy,
    MultipleChoice,
    NumericMatch,
    OmniAgentScorer,
    OmniGaiaScorer,
    Score,
    Scorer,
    Task,
    TaskMetadata,
    TemporalIoU,
    judge_models,
    role_model,
)
from omnilab.bench.scoring import (
    extract_answer,
    extract_choice,
    label_tolerance,
    last_words,
    mean_relative_accuracy,
    parse_verdict,
    temporal_iou,
)
from omnilab.bench.templates import render
from omnilab.config import get_settings
from omnilab.models import Model, ModelError
from omnilab.models.providers.scripted import error, text

T = TypeVar("T")
MakeModel = Callable[..., Model]  # the make_model fixture of conftest.py


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def task(label: str, *aliases: str, question: str = "How many years passed?", **meta: Any) -> Task:
    return Task(
        id="t1",
        dataset="test",
        question=question,
        answers=AnswerSet(label=label, aliases=aliases),
        metadata=TaskMetadata(**meta),
    )


LONG_OUTPUT = " ".join(f"w{i}" for i in range(30)) + " <answer>two years</answer>"


def test_scorers_fit_the_protocol(make_model: MakeModel) -> None:
    judge = make_model([])
    for scorer in (
        OmniGaiaScorer(judge),
        MajorityVote([judge]),
        MultipleChoice(),
        NumericMatch(),
        TemporalIoU(),
        MeanRelativeAccuracy(),
        AnswerSetMatch(),
        OmniAgentScorer(),
    ):
        assert isinstance(scorer, Scorer)


def test_extraction_helpers() -> None:
    assert extract_answer("a <answer> 1 </answer> b <answer>\n2\n</answer>") == "2"
    assert extract_answer("no tag") is None
    assert last_words("  one\ttwo\nthree  ", 2) == "two three"


def test_exact_match_short_circuits_without_asking_the_judge(make_model: MakeModel) -> None:
    judge = make_model([])  # any call would fail: the script is empty
    score = run(OmniGaiaScorer(judge).score(task("2 Years"), "so... <answer>2   years</answer>"))
    assert (score.correct, score.exact_match, score.value) == (True, True, 1.0)
    assert score.extracted == "2   years" and score.judges == []
    assert judge.adapter.requests == []  # type: ignore[attr-defined]


@pytest.mark.parametrize(("reply", "verdict"), [("Correct", True), ("**Incorrect.**", False)])
def test_judge_decides_when_exact_match_fails(
    make_model: MakeModel, reply: str, verdict: bool
) -> None:
    judge = make_model([text(reply)])
    score = run(OmniGaiaScorer(judge).score(task("2 years"), LONG_OUTPUT))
    assert (score.correct, score.exact_match) == (verdict, False)
    assert score.extracted == "two years"
    # The judge sees the last 20 words of the whole output, not the <answer> span (A.2).
    assert score.judge_input == last_words(LONG_OUTPUT, 20)
    assert score.judge_input.startswith("w12 ")
    assert score.judges[0].replies == [reply] and score.judges[0].error is None
    (messages, _, config), *_ = judge.adapter.requests  # type: ignore[attr-defined]
    expected = render(
        "omnigaia_judge",
        question="How many years passed?",
        predicted=score.judge_input,
        standard="2 years",
    )
    assert messages[0].text == expected and config.temperature == 0.0


def test_a_rambling_judge_is_asked_again_then_recorded_as_a_judge_error(
    make_model: MakeModel,
) -> None:
    replies = ["Yes, the prediction is right.", "Correct, mostly", "The answer is correct"]
    judge = make_model([text(r) for r in replies])
    score = run(OmniGaiaScorer(LLMJudge(judge, attempts=3)).score(task("2 years"), LONG_OUTPUT))
    assert score.correct is None and score.value == 0.0
    assert score.judges[0].replies == replies and score.judges[0].verdict is None
    assert score.error == "no clear Correct/Incorrect verdict in 3 replies"
    second = judge.adapter.requests[1][0]  # type: ignore[attr-defined]
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[-1].text == "Your reply must be exactly one word: Correct or Incorrect."


def test_judge_attempts_come_from_settings(
    make_model: MakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_BENCH__JUDGE_ATTEMPTS", "1")
    get_settings.cache_clear()
    judge = make_model([text("Probably correct")])
    score = run(OmniGaiaScorer(judge).score(task("2 years"), LONG_OUTPUT))
    assert score.error == "no clear Correct/Incorrect verdict in 1 replies"


def test_a_rambling_judge_that_recovers_counts(make_model: MakeModel) -> None:
    judge = make_model([text("I think it is fine"), text("Correct")])
    score = run(OmniGaiaScorer(judge).score(task("2 years"), LONG_OUTPUT))
    assert score.correct is True and score.judges[0].replies == ["I think it is fine", "Correct"]


def test_a_failing_judge_is_a_judge_error_not_a_crash(make_model: MakeModel) -> None:
    judge = make_model([error(500, times=2)])
    score = run(OmniGaiaScorer(judge).score(task("2 years"), LONG_OUTPUT))
    assert score.correct is None and score.error is not None
    assert score.error.startswith("judge call failed: model scripted:judge")


def test_a_misconfigured_judge_raises(make_model: MakeModel) -> None:
    judge = make_model([error(401)])
    with pytest.raises(ModelError, match="check the API key"):
        run(OmniGaiaScorer(judge).score(task("2 years"), LONG_OUTPUT))


def test_empty_output_is_wrong_without_a_judge(make_model: MakeModel) -> None:
    judge = make_model([])
    score = run(OmniGaiaScorer(judge).score(task("2 years"), "  \n"))
    assert (score.correct, score.exact_match) == (False, False)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Correct", "correct"),
        (" incorrect\n", "incorrect"),
        ("'Correct.'", "correct"),
        ("**INCORRECT**", "incorrect"),
        ("Correct, but only partly", None),
        ("The prediction is correct", None),
        ("Incorrect / Correct", None),
        ("", None),
    ],
)
def test_verdicts_are_parsed_strictly(reply: str, expected: str | None) -> None:
    assert parse_verdict(reply) == expected


def test_majority_vote_two_of_three(make_model: MakeModel) -> None:
    judges = [
        make_model([text("Correct")], name="scripted:a"),
        make_model([text("Incorrect")], name="scripted:b"),
        make_model([text("Correct")], name="scripted:c"),
    ]
    score = run(
        MajorityVote(judges).score(task("Inception"), "It is <answer>Inception (2010)</answer>")
    )
    assert score.correct is True and score.exact_match is False
    assert score.judge_input == "Inception (2010)"  # the <answer> span, when there is one
    assert [j.judge for j in score.judges] == ["scripted:a", "scripted:b", "scripted:c"]
    assert score.details == {"votes_correct": 2.0, "votes_incorrect": 1.0}


def test_majority_vote_without_a_majority_is_undecided(make_model: MakeModel) -> None:
    judges = [
        make_model([text("Correct")], name="scripted:a"),
        make_model([text("Incorrect")], name="scripted:b"),
        make_model([text("maybe")] * 3, name="scripted:c"),
    ]
    score = run(MajorityVote(judges).score(task("Inception"), "<answer>Inception</answer>"))
    assert score.correct is None
    assert score.error == "no majority: 1 correct, 1 incorrect, 1 judge errors"
    assert score.exact_match is True  # recorded, though the vote decides


def test_judge_role_has_its_own_cache(tmp_path: Path) -> None:
    script = tmp_path / "judge.json"
    script.write_text(json.dumps(["Correct"]), encoding="utf-8")
    scorer = OmniGaiaScorer(role_model("judge", f"scripted:{script}"))
    first = run(scorer.score(task("2 years"), LONG_OUTPUT))
    # The script has one reply; the second, identical question is answered from the cache.
    again = run(scorer.score(task("2 years"), LONG_OUTPUT))
    assert first.correct is True and again.correct is True
    model = scorer.judge.model
    assert model.cache_hits == 1 and model.cache is not None
    assert model.cache.path.parent.name == "roles" and model.cache.path.name == "judge.sqlite3"


def test_a_role_without_a_model_is_a_one_line_error() -> None:
    with pytest.raises(BenchError) as err:
        role_model("analyst")
    assert str(err.value) == (
        "no analyst model: pass one as provider:model, or set bench.analyst_model "
        "(OMNILAB_BENCH__ANALYST_MODEL)"
    )


@pytest.mark.parametrize(
    ("prediction", "letter"),
    [
        ("(B)", "B"),
        ("Answer: b", "B"),
        ("B. Paris", "B"),
        ("**C**", "C"),
        ("The answer is A", "A"),
        ("Reasoning first.\nThe answer is (D).", "D"),
        ("<answer>b</answer>", "B"),
        ("Paris", "B"),
        ("the answer is a city in France", None),
        ("Either (A) or (B)", None),
        ("E", None),
    ],
)
def test_multiple_choice_letter_extraction(prediction: str, letter: str | None) -> None:
    options = {"A": "London", "B": "Paris", "C": "Rome", "D": "Madrid"}
    assert extract_choice(prediction, options) == letter


def test_multiple_choice_scoring() -> None:
    mcq = task("B", question="Capital of France?", options={"A": "London", "B": "Paris"})
    right = run(MultipleChoice().score(mcq, "I am sure. Answer: b"))
    wrong = run(MultipleChoice().score(mcq, "(A)"))
    assert (right.correct, right.extracted) == (True, "B")
    assert (wrong.correct, wrong.extracted, wrong.value) == (False, "A", 0.0)


def test_numeric_match_with_units_and_tolerance() -> None:
    assert label_tolerance("12.5") == pytest.approx(0.05)
    assert label_tolerance("790 advertisers") == 0.5
    # "12.5 km" against 12.49: 0.01 apart.
    score = run(NumericMatch(abs_tol=0.05).score(task("12.49"), "<answer>12.5 km</answer>"))
    assert (score.correct, score.extracted, score.exact_match) == (True, "12.5", False)
    strict = run(NumericMatch(abs_tol=0.0).score(task("12.49"), "<answer>12.5 km</answer>"))
    assert strict.correct is False
    relative = run(NumericMatch(rel_tol=0.001).score(task("12.49 km"), "12.5"))
    assert relative.correct is True  # 0.01 <= 0.001 * 12.49
    # The default tolerance is the label's precision: 12.49 rounds to 12.5.
    assert run(NumericMatch().score(task("12.5 km"), "about 12.49 kilometres")).correct is True
    assert run(NumericMatch().score(task("790"), "<answer>1,234</answer>")).correct is False
    assert run(NumericMatch().score(task("1234"), "<answer>1,234</answer>")).correct is True
    assert run(NumericMatch().score(task("7"), "no number here")).extracted is None


def test_temporal_iou_merges_overlapping_spans() -> None:
    # Predicted [0,10] and [5,15] merge to [0,15]; truth [10,20]: overlap 5, union 20.
    assert temporal_iou([(0.0, 10.0), (5.0, 15.0)], [(10.0, 20.0)]) == pytest.approx(0.25)
    # Unmerged, the overlap [5,10] would be counted twice.
    assert temporal_iou([(0, 4), (6, 10)], [(2, 8)]) == pytest.approx(4 / 10)
    assert temporal_iou([(0, 1)], [(2, 3)]) == 0.0
    spans = task("[[10, 20]]", spans=((10.0, 20.0),))
    score = run(TemporalIoU().score(spans, "<answer>[[0, 10], [5, 15]]</answer>"))
    assert score.value == pytest.approx(0.25) and score.correct is False
    good = run(TemporalIoU().score(spans, "From 11s to 20s."))
    assert good.value == pytest.approx(0.9) and good.correct is True
    assert run(TemporalIoU().score(spans, "no idea")).value == 0.0


def test_mean_relative_accuracy() -> None:
    # Relative error 0.1 is below 1 - t for t in 0.50..0.85 (8 of 10 thresholds).
    assert mean_relative_accuracy(110.0, 100.0) == pytest.approx(0.8)
    assert mean_relative_accuracy(100.0, 100.0) == 1.0
    assert mean_relative_accuracy(160.0, 100.0) == 0.0  # 0.6 is not below 0.5
    # 0.05 is not below 1 - 0.95 (strict inequality), so 9 of 10.
    assert mean_relative_accuracy(105.0, 100.0) == pytest.approx(0.9)
    assert mean_relative_accuracy(0.0, 0.0) == 1.0 and mean_relative_accuracy(1.0, 0.0) == 0.0
    # 2.9 m for 2.4 m: error 0.208 is below 0.50, 0.45, 0.40, 0.35, 0.30, 0.25 (6 of 10).
    score = run(MeanRelativeAccuracy().score(task("2.4"), "<answer>2.9 m</answer>"))
    assert score.value == pytest.approx(0.6) and score.correct is True


def test_answer_set_with_aliases() -> None:
    answers = task("12.5 km", "12.5 kilometres", "12.5km")
    scorer = AnswerSetMatch()
    assert run(scorer.score(answers, "<answer>12.5 Kilometres</answer>")).correct is True
    assert run(scorer.score(answers, "<answer>12.6 km</answer>")).correct is False
    assert run(scorer.score(answers, "12.5 km")).correct is False  # no <answer> span
    assert run(AnswerSetMatch(require_tag=False).score(answers, " 12.5KM ")).correct is True


def test_omniagent_dispatch_by_question_type() -> None:
    scorer = OmniAgentScorer()
    cases: list[tuple[Task, str, float]] = [
        (task("B", task_type="MCQ", options={"A": "x", "B": "y"}), "B", 1.0),
        (task("7", task_type="NUM"), "7.4", 0.0),  # NUM is an exact match (eq. 2)
        (task("[[0, 10]]", task_type="TR", spans=((0.0, 10.0),)), "[[5, 10]]", 0.5),
        (task("100", task_type="SIZE"), "110", 0.8),
        (task("He waves", task_type="FF"), "he waves", 1.0),
    ]
    for item, prediction, value in cases:
        score: Score = run(scorer.score(item, prediction))
        assert score.value == pytest.approx(value), item.metadata.task_type


def test_majority_judges_come_from_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = []
    for reply, who in (("Correct", "a"), ("Correct", "b"), ("Incorrect", "c")):
        script = tmp_path / f"{who}.json"
        script.write_text(json.dumps([reply]), encoding="utf-8")
        names.append(f"scripted:{script}")
    monkeypatch.setenv("OMNILAB_BENCH__JUDGE_MODELS", json.dumps(names))
    get_settings.cache_clear()
    judges = judge_models()
    assert [j.name for j in judges] == names
    score = run(MajorityVote(judges).score(task("Inception"), "<answer>Inception</answer>"))
    assert score.correct is True and score.details["votes_correct"] == 2.0


def test_agent_and_scorer_read_the_same_answer(make_model: MakeModel) -> None:
    """One extractor: what the agent records as its answer is what every scorer reads."""
    from omnilab.agents.answer import final_answer

    judge = make_model([])  # any judge call would fail: exact match must decide
    upper = "Thinking done. <ANSWER>Paris</ANSWER>"
    assert final_answer(upper) == ("Paris", "tag")
    assert extract_answer(upper) == "Paris"
    paris = task("Paris", question="Capital of France?")
    gaia = run(OmniGaiaScorer(judge).score(paris, upper))
    assert (gaia.correct, gaia.exact_match, gaia.extracted) == (True, True, "Paris")
    assert run(AnswerSetMatch().score(paris, upper)).correct is True
    # A tag cut off by the token limit: the agent records "B", and so does the MCQ scorer.
    cut = "The host wears green, so <answer>B"
    assert final_answer(cut) == ("B", "unclosed_tag")
    mcq = task("B", options={"A": "red", "B": "green"})
    assert run(MultipleChoice().score(mcq, cut)).extracted == "B"
    # Numbers after the answer do not leak into it.
    number = run(NumericMatch().score(task("7"), "<Answer>7</Answer> (checked 3 times)"))
    assert (number.correct, number.extracted) == (True, "7")


def test_size_answers_keep_their_units() -> None:
    room = task("26.4", question="What is the size of this room (in square meters)?")
    # The old reader took the exponent of m^2 for the answer (2 -> MRA 0).
    assert run(MeanRelativeAccuracy().score(room, "<answer>26.4 m^2</answer>")).value == 1.0
    assert run(MeanRelativeAccuracy().score(room, "26,4 m²")).value == 1.0
    length = task("1.5", question="How long is the sofa (in meters)?")
    cm = run(MeanRelativeAccuracy().score(length, "<answer>150 cm</answer>"))
    assert (cm.value, cm.extracted, cm.details["unit"]) == (1.0, "1.5", "m")
    # A unit attribute from the dataset wins over the question's wording.
    stated = task("150", question="How long is the sofa?", attributes={"unit": "cm"})
    assert run(MeanRelativeAccuracy().score(stated, "1.5 m")).value == 1.0
    count = task("10", question="How many chair(s) are in this room?")
    assert run(MeanRelativeAccuracy().score(count, "ten")).value == 1.0


def test_omniagent_variants_are_scored_by_their_base_type(bench_data: Path) -> None:
    from omnilab.bench import load_dataset

    tasks = load_dataset("omniagent", bench_data / "omniagent_rl.jsonl").tasks
    predictions = [
        "<answer>B</answer>",  # MCQ_LongVR-Short: letter match
        "I think it is (C).",  # MCQ_Holmes: wrong letter
        "<answer>[[72.405, 79.923]]</answer>",  # TR_LongVALE-Short: IoU ~ 1
        "From 1:41 to 1:51",  # TR_MultiHop: [101, 111] of [[101,111],[178,179]] -> 10/11
        "about 39.5 m^2",  # SIZE_VSI: MRA 1
    ]
    scores = [run(OmniAgentScorer().score(t, p)) for t, p in zip(tasks, predictions, strict=True)]
    assert [s.scorer for s in scores] == ["mcq", "mcq", "temporal_iou", "temporal_iou", "mra"]
    assert [s.value for s in scores] == pytest.approx([1.0, 0.0, 1.0, 10 / 11, 1.0], abs=1e-4)
    assert [s.correct for s in scores] == [True, False, True, True, True]
