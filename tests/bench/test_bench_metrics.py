"""Metrics on a hand-counted fixture, bootstrap intervals, McNemar, and the result records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from omnilab.bench import (
    BenchError,
    Rate,
    Score,
    Task,
    TaskMetadata,
    TaskResult,
    accuracy,
    accuracy_by,
    accuracy_ci,
    append_result,
    bootstrap_ci,
    compare_runs,
    mcnemar_test,
    non_empty_rate,
    pass_at_1,
    read_results,
    summarize,
    tool_call_stats,
    usage_stats,
    wall_time_stats,
    write_results,
)
from omnilab.bench.scoring import extract_answer
from omnilab.models import Usage


def result(
    task_id: str,
    *,
    judged: bool | None,
    em: bool = False,
    level: str | None = None,
    category: str | None = None,
    modalities: str = "video",
    tools: dict[str, int] | None = None,
    failed: bool = False,
    tokens: int = 0,
    wall: float = 1.0,
    prediction: str = "<answer>x</answer>",
) -> TaskResult:
    score = None
    if not failed:
        score = Score(
            scorer="omnigaia", value=1.0 if judged else 0.0, correct=judged, exact_match=em
        )
    return TaskResult(
        task_id=task_id,
        dataset="omnigaia",
        prediction="" if failed else prediction,
        extracted=None if failed else extract_answer(prediction),
        score=score,
        tool_calls=tools or {},
        usage=Usage(prompt_tokens=tokens, completion_tokens=tokens // 10),
        cost_usd=0.01 * tokens / 100 if tokens else None,
        wall_s=wall,
        error="timeout after 600 s" if failed else None,
        metadata=TaskMetadata(
            level=level,
            category=category,
            required_tools=tuple(sorted(tools or {})),
        ),
        modalities=modalities,
    )


@pytest.fixture()
def run_a() -> list[TaskResult]:
    """Eight tasks; the counts in the tests below are by hand from this table."""
    return [
        result(
            "1",
            judged=True,
            em=True,
            level="Easy",
            category="Technology",
            tools={"web_search": 2},
            tokens=1000,
            wall=10.0,
        ),
        result(
            "2",
            judged=True,
            level="Easy",
            category="Technology",
            modalities="audio+image",
            tools={"web_search": 1, "code_executor": 1},
            tokens=2000,
            wall=20.0,
        ),
        result("3", judged=False, level="Medium", category="Movies", tokens=500, wall=5.0),
        result(
            "4",
            judged=None,
            level="Medium",
            category="Technology",
            tools={"web_search": 3},
            wall=30.0,
        ),
        result(
            "5",
            judged=False,
            failed=True,
            level="Hard",
            category="Movies",
            modalities="audio+image",
            wall=600.0,
        ),
        result(
            "6",
            judged=True,
            level="Hard",
            category="Technology",
            tools={"page_browser": 1},
            wall=40.0,
        ),
        result("7", judged=False, category="Sports", prediction="<answer></answer>", wall=2.0),
        result(
            "8",
            judged=True,
            em=True,
            level="Easy",
            category="Sports",
            modalities="audio+image",
            wall=3.0,
        ),
    ]


def test_pass_at_1_and_em_side_by_side(run_a: list[TaskResult]) -> None:
    # Judged: 4 right of 7 decided (task 4 is a judge error); the failed run 5 is wrong.
    assert pass_at_1(run_a) == Rate(correct=4, total=7, undecided=1, value=4 / 7, mean_score=4 / 7)
    em = accuracy(run_a, measure="em")
    assert (em.correct, em.total, em.undecided) == (2, 8, 0)


def test_groupings_match_a_hand_count(run_a: list[TaskResult]) -> None:
    by_level = accuracy_by(run_a, "level")
    assert list(by_level) == ["Easy", "Medium", "Hard", "(none)"]
    assert {k: (r.correct, r.total, r.undecided) for k, r in by_level.items()} == {
        "Easy": (3, 3, 0),
        "Medium": (0, 1, 1),
        "Hard": (1, 2, 0),
        "(none)": (0, 1, 0),
    }
    by_category = accuracy_by(run_a, "category")
    assert {k: (r.correct, r.total) for k, r in by_category.items()} == {
        "Movies": (0, 2),
        "Sports": (1, 2),
        "Technology": (3, 3),
    }
    by_modality = accuracy_by(run_a, "modalities")
    assert {k: (r.correct, r.total) for k, r in by_modality.items()} == {
        "audio+image": (2, 3),
        "video": (2, 4),
    }
    by_tools = accuracy_by(run_a, "required_tools")
    assert {k: (r.correct, r.total, r.undecided) for k, r in by_tools.items()} == {
        "web_search": (1, 1, 1),
        "code_executor+web_search": (1, 1, 0),
        "page_browser": (1, 1, 0),
        "(none)": (1, 4, 0),
    }
    assert list(by_tools) == ["code_executor+web_search", "page_browser", "web_search", "(none)"]
    em_by_level = accuracy_by(run_a, "level", measure="em")
    assert (em_by_level["Easy"].correct, em_by_level["Easy"].total) == (2, 3)
    by_first_letter = accuracy_by(run_a, lambda r: r.task_id[0])
    assert sum(r.total for r in by_first_letter.values()) == 7


def test_tool_calls_tokens_non_empty_and_wall_time(run_a: list[TaskResult]) -> None:
    tools = tool_call_stats(run_a)
    # Calls per task: 2, 2, 0, 3, 0, 1, 0, 0.
    assert (tools.total, tools.max, tools.tasks_without_calls) == (8, 3, 4)
    assert tools.mean == 1.0 and tools.median == 0.5
    assert tools.distribution == {0: 4, 1: 1, 2: 2, 3: 1}
    assert tools.by_name == {"web_search": 6, "code_executor": 1, "page_browser": 1}
    usage = usage_stats(run_a)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3500, 350, 3850)
    assert usage.cost_usd == pytest.approx(0.35) and usage.tasks_with_cost == 3
    # Task 5 failed (empty output) and task 7 answered an empty <answer></answer>.
    rate = non_empty_rate(run_a)
    assert rate == pytest.approx(6 / 8)
    wall = wall_time_stats(run_a)
    assert (wall.total_s, wall.max_s, wall.median_s) == (710.0, 600.0, 15.0)
    assert wall.p90_s == 600.0  # nearest rank: the 8th of 8 sorted times


def test_summary_bundles_everything(run_a: list[TaskResult]) -> None:
    summary = summarize(run_a, resamples=500)
    assert summary.tasks == 8 and summary.failed_runs == 1
    assert summary.pass_at_1.value == pytest.approx(4 / 7)
    assert summary.groups["level"]["Easy"].value == 1.0
    assert summary.em_groups["category"]["Sports"].correct == 1
    assert summary.pass_at_1_ci is not None and summary.pass_at_1_ci.n == 7
    assert set(summary.groups) == {"level", "category", "task_type", "modalities", "required_tools"}
    assert json.loads(summary.model_dump_json())["pass_at_1"]["correct"] == 4


def test_bootstrap_is_deterministic_and_contains_the_point() -> None:
    values = [1.0] * 13 + [0.0] * 7
    first = bootstrap_ci(values, seed=7)
    assert first == bootstrap_ci(values, seed=7)
    assert first != bootstrap_ci(values, seed=8)
    assert first.point == pytest.approx(0.65)
    assert 0.0 <= first.low < first.point < first.high <= 1.0
    # The binomial standard error is 0.107, so a 95% interval spans roughly +-0.21.
    assert 0.3 < first.high - first.low < 0.5
    assert bootstrap_ci([1.0, 1.0], resamples=50).low == 1.0
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_ci([])


def test_bootstrap_of_verdicts_matches_resampling_the_values() -> None:
    # 0/1 verdicts take the binomial shortcut; nudging one value off {0, 1} forces the
    # resampling path: both must give the same interval up to Monte Carlo noise.
    verdicts = [1.0] * 130 + [0.0] * 70
    nudged = [*verdicts[:-1], 1e-9]
    fast = bootstrap_ci(verdicts, resamples=20_000, seed=3)
    slow = bootstrap_ci(nudged, resamples=20_000, seed=3)
    assert fast.point == pytest.approx(0.65) and slow.point == pytest.approx(0.65)
    assert fast.low == pytest.approx(slow.low, abs=0.01)
    assert fast.high == pytest.approx(slow.high, abs=0.01)


def test_accuracy_ci_uses_decided_tasks(run_a: list[TaskResult]) -> None:
    interval = accuracy_ci(run_a, resamples=2000, seed=1)
    assert interval is not None and interval.n == 7
    assert interval.point == pytest.approx(4 / 7)
    assert interval.low <= interval.point <= interval.high
    assert accuracy_ci([result("x", judged=None)]) is None


def test_mcnemar_exact_and_chi_square() -> None:
    # 1 vs 9 discordant: p = 2 * (C(10,0) + C(10,1)) / 2^10 = 22/1024.
    assert mcnemar_test(1, 9) == (1.0, 22 / 1024, "exact")
    assert mcnemar_test(0, 0) == (0.0, 1.0, "exact")
    statistic, p, method = mcnemar_test(30, 10)
    assert method == "chi2" and statistic == pytest.approx(19**2 / 40)
    assert p == pytest.approx(math.erfc(math.sqrt(9.025 / 2)))
    assert p == pytest.approx(0.002663, abs=1e-6)


def test_compare_runs_pairs_shared_tasks() -> None:
    # Contingency: both right 3, only A 1, only B 6, both wrong 2; plus unshared and undecided.
    pattern = [(True, True)] * 3 + [(True, False)] + [(False, True)] * 6 + [(False, False)] * 2
    a = [result(str(i), judged=x) for i, (x, _) in enumerate(pattern)]
    b = [result(str(i), judged=y) for i, (_, y) in enumerate(pattern)]
    a.append(result("only-in-a", judged=True))
    a.append(result("undecided", judged=None))
    b.append(result("undecided", judged=True))
    test = compare_runs(a, b)
    assert (test.shared, test.both_correct, test.only_a, test.only_b, test.both_wrong) == (
        12,
        3,
        1,
        6,
        2,
    )
    assert test.excluded == 1 and test.method == "exact"
    assert test.p_value == pytest.approx(2 * (1 + 7) / 2**7)  # 0.125


def test_results_round_trip_and_survive_a_cut_off_line(
    run_a: list[TaskResult], tmp_path: Path
) -> None:
    path = tmp_path / "run" / "results.jsonl"
    write_results(path, run_a[:3])
    append_result(path, run_a[3])
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert (record["em"], record["judged"], record["schema_version"]) == (True, True, 1)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"task_id": "9", "predic')  # a crash mid-write
    loaded = read_results(path)
    assert loaded == run_a[:4]
    path.write_text('{"task_id": 5}\n{"task_id": "6"}\n', encoding="utf-8")
    with pytest.raises(BenchError, match=r"line 1 is not a task result \(task_id: "):
        read_results(path)


def test_result_for_task_copies_what_grouping_needs() -> None:
    task = Task(
        id="t9",
        dataset="omnigaia",
        question="q",
        answers={"label": "a"},  # type: ignore[arg-type]
        metadata=TaskMetadata(level="Hard", category="Movies"),
    )
    made = TaskResult.for_task(task, prediction="<answer>a</answer>", wall_s=2.5)
    assert (made.task_id, made.dataset, made.metadata.level, made.modalities) == (
        "t9",
        "omnigaia",
        "Hard",
        "none",
    )
    assert made.judged is None and made.em is None  # not scored yet, not failed


def omniagent_result(
    task_id: str, qtype: str, value: float, *, correct: bool | None = None, failed: bool = False
) -> TaskResult:
    base, _, sub = qtype.partition("_")
    attributes = {"question_type": base} | ({"question_subtype": sub} if sub else {})
    score = None
    if not failed:
        score = Score(
            scorer=base.lower(), value=value, correct=value >= 0.5 if correct is None else correct
        )
    return TaskResult(
        task_id=task_id,
        dataset="omniagent",
        prediction="" if failed else "x",
        score=score,
        error="timeout" if failed else None,
        metadata=TaskMetadata(task_type=base, attributes=attributes),
        modalities="video",
    )


@pytest.fixture()
def omniagent_run() -> list[TaskResult]:
    return [
        omniagent_result("m1", "MCQ_LongVR-Short", 1.0),
        omniagent_result("m2", "MCQ_Holmes", 0.0),
        omniagent_result("t1", "TR_LongVALE-Short", 0.9),
        omniagent_result("t2", "TR_MultiHop", 0.3),
        omniagent_result("t3", "TR_MultiHop", 0.0, failed=True),
        omniagent_result("s1", "SIZE_VSI", 0.8),
        omniagent_result("s2", "SIZE_VSI", 0.4),
    ]


def test_omniagent_figures_are_accuracy_iou_and_mra(omniagent_run: list[TaskResult]) -> None:
    summary = summarize(omniagent_run, resamples=200)
    assert summary.dataset == "omniagent"
    figures = {f.name: f for f in summary.figures}
    assert list(figures) == ["MCQ accuracy", "mean IoU (TR)", "mean MRA (SIZE)"]
    assert figures["MCQ accuracy"].value == pytest.approx(0.5)
    # The failed TR run counts as IoU 0: (0.9 + 0.3 + 0) / 3.
    assert (figures["mean IoU (TR)"].value, figures["mean IoU (TR)"].n) == (pytest.approx(0.4), 3)
    assert figures["mean MRA (SIZE)"].value == pytest.approx(0.6)
    interval = figures["mean IoU (TR)"].interval
    assert interval is not None and interval.low <= 0.4 <= interval.high
    by_type = summary.groups["question_type"]
    assert list(by_type) == ["MCQ", "TR", "SIZE"]
    assert (by_type["TR"].value, by_type["TR"].mean_score) == (
        pytest.approx(1 / 3),
        pytest.approx(0.4),
    )
    assert summary.groups["question_subtype"]["MultiHop"].total == 2


def test_other_benchmarks_headline_pass_at_1(run_a: list[TaskResult]) -> None:
    (figure,) = summarize(run_a, resamples=200).figures
    assert (figure.name, figure.n, figure.value) == ("Pass@1", 7, pytest.approx(4 / 7))


def _metrics_output(tmp_path: Path, results: list[TaskResult], *args: str) -> str:
    from typer.testing import CliRunner

    from omnilab.cli.main import app

    folder = tmp_path / "run"
    write_results(folder / "results.jsonl", results)
    out = CliRunner().invoke(app, ["metrics", str(folder), *args])
    assert out.exit_code == 0, out.output
    return out.output


def test_metrics_command_shows_native_figures(
    tmp_path: Path, omniagent_run: list[TaskResult]
) -> None:
    text = _metrics_output(tmp_path, omniagent_run)
    for expected in (
        "mean IoU (TR)",
        "40.0",
        "mean MRA (SIZE)",
        "60.0",
        "by question_type",
        "by question_subtype",
        "mean score",
        "MultiHop",
    ):
        assert expected in text
    # OmniAgent items have no Level or category: no table of "(none)" rows.
    assert "by level" not in text and "(none)" not in text


def test_metrics_hides_groupings_no_task_has(tmp_path: Path) -> None:
    results = [result("1", judged=True, category="Art"), result("2", judged=False, category="Art")]
    text = _metrics_output(tmp_path, results)
    assert "by category" in text and "by level" not in text
    assert "no task has a level; not tabled" in text


def test_metrics_for_deepsearch_groups_by_modality_and_audio_type(tmp_path: Path) -> None:
    results = [
        result("1", judged=True).model_copy(
            update={
                "dataset": "omni-deepsearch",
                "metadata": TaskMetadata(
                    attributes={"retrieval_modality": "image", "audio_type": "music"}
                ),
            }
        )
    ]
    text = _metrics_output(tmp_path, results)
    assert "by retrieval_modality" in text and "by audio_type" in text and "music" in text
