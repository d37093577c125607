"""OmniAgent's scorer under omnilab's rules and the release's (``video_env.py``'s rewards,
``omniagent_eval.py``'s reward > 0.5): both verdicts recorded, and ``omnilab metrics`` shows the
Pass@1 of each side by side."""

from __future__ import annotations

import asyncio

import pytest
from rich.console import Console

from omnilab.bench import TaskResult
from omnilab.bench.metrics import pass_at_1_by_rules, summarize
from omnilab.bench.scoring import OmniAgentScorer, Score
from omnilab.bench.scoring.registry import SCORERS
from omnilab.bench.tables import summary_tables
from omnilab.bench.task import AnswerSet, Task, TaskMetadata


def task(kind: str, label: str, *, spans: tuple[tuple[float, float], ...] | None = None) -> Task:
    options = {"A": "red", "B": "blue", "C": "green"} if kind == "MCQ" else None
    meta = TaskMetadata(task_type=kind, options=options, spans=spans)
    return Task(id=f"t-{kind}", dataset="omniagent", question="?", answers=AnswerSet(label=label),
                metadata=meta)  # fmt: skip


def both(kind: str, label: str, prediction: str, **kw: object) -> tuple[Score, Score]:
    t = task(kind, label, **kw)  # type: ignore[arg-type]
    ours = asyncio.run(OmniAgentScorer().score(t, prediction))
    theirs = asyncio.run(SCORERS.get("omniagent-release").build([]).score(t, prediction))
    return ours, theirs


@pytest.mark.parametrize(
    ("kind", "label", "prediction", "omnilab", "release"),
    [
        ("MCQ", "C", "C", True, True),
        ("MCQ", "C", " c ", True, True),  # strip().upper()
        ("MCQ", "C", "The answer is C", True, False),  # omnilab reads the letter, the release not
        ("NUM", "3", "3.004", False, True),  # equal after round(x, 2)
        ("NUM", "12", "about 12 people", True, True),  # the first number
        ("SIZE", "2.0", "150 cm", False, False),
    ],
)
def test_verdicts_under_both_rules(
    kind: str, label: str, prediction: str, omnilab: bool, release: bool
) -> None:
    ours, theirs = both(kind, label, prediction)
    assert ours.correct is omnilab and theirs.correct is release
    for score in (ours, theirs):
        assert score.details["strict"] == float(omnilab)
        assert score.details["reference"] == float(release)
    assert theirs.scorer == "omniagent-release" and ours.scorer != "omniagent-release"


def test_temporal_answers_the_release_way() -> None:
    spans = ((10.0, 20.0),)
    _, theirs = both("TR", "[[10, 20]]", "[[10.0, 20.0]]", spans=spans)
    assert theirs.value == 1.0 and theirs.correct is True
    ours, theirs = both("TR", "[[10, 20]]", "10s to 20s", spans=spans)  # not JSON
    assert ours.correct is True and theirs.value == 0.0 and theirs.correct is False
    _, theirs = both("TR", "[[10, 20]]", "[[20.0, 10.0]]", spans=spans)  # a reversed span
    assert theirs.value == 0.0
    _, theirs = both("TR", "[[10, 20]]", "[[10.0, 15.0]]", spans=spans)  # IoU 0.5, not above
    assert theirs.value == 0.5 and theirs.correct is False


def test_metrics_show_both_pass_at_1() -> None:
    results = []
    for i, (prediction, label) in enumerate([("C", "C"), ("The answer is C", "C")]):
        t = task("MCQ", label)
        score = asyncio.run(OmniAgentScorer().score(t, prediction))
        results.append(
            TaskResult(
                task_id=f"q{i}",
                dataset="omniagent",
                prediction=prediction,
                score=score,
                metadata=t.metadata,
            )
        )
    rules = pass_at_1_by_rules(results)
    assert (rules["strict"].correct, rules["reference"].correct) == (2, 1)
    console = Console(width=200, record=True)
    for table in summary_tables(summarize(results), label="run"):
        console.print(table)
    shown = console.export_text()
    assert "Pass@1 (strict rules)" in shown and "Pass@1 (reference rules)" in shown


def test_an_mcq_gold_given_as_option_text_is_its_first_character_under_the_release() -> None:
    # video_env.py: gt = self.answer[0].strip().upper(): "green" is "G", never the letter C
    meta = TaskMetadata(task_type="MCQ", options={"A": "red", "B": "blue", "C": "green"})
    t = Task(id="m", dataset="omniagent", question="?", answers=AnswerSet(label="C"),
             metadata=meta, original={"answer": "green"})  # fmt: skip
    ours = asyncio.run(OmniAgentScorer().score(t, "C"))
    theirs = asyncio.run(SCORERS.get("omniagent-release").build([]).score(t, "C"))
    assert ours.correct is True and theirs.correct is False
    assert asyncio.run(SCORERS.get("omniagent-release").build([]).score(t, "g")).correct is True
    listed = t.model_copy(update={"original": {"answer": ["C"]}})
    assert asyncio.run(SCORERS.get("omniagent-release").build([]).score(listed, "C")).correct
