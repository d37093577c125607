"""Error analysis (OmniGAIA B.6) through a scripted analyst, and the prompt templates."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from omnilab.bench import (
    ERROR_CATEGORIES,
    Score,
    Task,
    TaskResult,
    analyze_errors,
    parse_analysis,
)
from omnilab.bench.analysis import AnalysisParseError
from omnilab.bench.templates import load_template, render
from omnilab.models import Model
from omnilab.models.providers.scripted import text

MakeModel = Callable[..., Model]  # the make_model fixture of conftest.py
PAPER = Path(__file__).resolve().parents[1] / "data" / "papers" / "omnigaia_appendix_b.md"


def fenced(categories: list[str], explanation: str = "why") -> str:
    body = json.dumps({"categories": categories, "explanation": explanation}, indent=2)
    return f"Here is my analysis.\n```json\n{body}\n```"


def scored(task: Task, correct: bool | None, **fields: object) -> TaskResult:
    score = Score(scorer="omnigaia", value=float(bool(correct)), correct=correct, exact_match=False)
    return TaskResult.for_task(task, score=score, **fields)


def test_failed_tasks_are_labelled_and_counted_by_level(
    sample_tasks: list[Task], make_model: MakeModel
) -> None:
    easy = next(t for t in sample_tasks if t.metadata.level == "Easy")
    medium = next(t for t in sample_tasks if t.metadata.level == "Medium")
    hard = next(t for t in sample_tasks if t.metadata.level == "Hard")
    results = [
        scored(easy, False, prediction="<answer>1 year</answer>", tool_calls={"web_search": 2}),
        scored(medium, False, prediction="I could not find it.").model_copy(update={"sample": 2}),
        scored(sample_tasks[-1], True),
        scored(sample_tasks[-2], None),
        TaskResult.for_task(hard, error="timeout after 600 s"),
        TaskResult(task_id="999", score=Score(scorer="x", value=0.0, correct=False)),
    ]
    analyst = make_model(
        [
            text(fenced(["Visual Perception Error", "Reasoning Error"], "misread the badge")),
            text("It was a reasoning problem."),
            text(fenced(["  reasoning error "])),
            text("{not json"),
            text(fenced(["Bad Luck"])),
        ],
        name="scripted:analyst",
    )
    analysis = asyncio.run(analyze_errors(results, sample_tasks, analyst, concurrency=1))
    assert analysis.skipped == {"correct": 1, "undecided": 1, "task not found": 1}
    assert (analysis.analysed, analysis.failures) == (2, 1)
    first, second, third = analysis.labels
    assert (first.task_id, first.level, first.categories) == (
        easy.id,
        "Easy",
        ["Visual Perception Error", "Reasoning Error"],
    )
    assert first.explanation == "misread the badge" and first.error is None
    assert second.categories == ["Reasoning Error"] and len(second.replies) == 2
    assert (first.sample, second.sample) == (0, 2)  # each failed rollout keeps its sample
    assert third.categories == [] and third.replies == ["{not json", fenced(["Bad Luck"])]
    assert third.error == "unusable analysis: unknown category 'Bad Luck'"
    assert list(analysis.frequencies) == list(ERROR_CATEGORIES)
    assert analysis.frequencies["Reasoning Error"] == 2
    assert analysis.frequencies["Visual Perception Error"] == 1
    assert sum(analysis.frequencies.values()) == 3
    assert analysis.by_level["Easy"]["Visual Perception Error"] == 1
    assert analysis.by_level["Medium"]["Reasoning Error"] == 1
    assert "Hard" not in analysis.by_level  # its analysis failed

    requests = analyst.adapter.requests  # type: ignore[attr-defined]
    prompt = requests[0][0][0].text
    assert prompt.startswith("You are an expert AI system analyst.")
    assert f"Question: {easy.question}\n" in prompt
    assert f"Correct Answer: {easy.answers.label}\n" in prompt
    assert json.dumps(easy.original["omni_modal_input"], ensure_ascii=False) in prompt
    assert "Tool calls: web_search x2\nFinal output:\n<answer>1 year</answer>" in prompt
    steps = easy.metadata.solution
    assert isinstance(steps, tuple) and "\n".join(steps) in prompt
    retry = requests[2][0]
    assert [m.role for m in retry] == ["user", "assistant", "user"]
    assert "the reply is not valid JSON" in retry[-1].text
    assert "Run error: timeout after 600 s" in requests[3][0][0].text


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("no json at all", "not valid JSON"),
        ("```json\n[1, 2]\n```", "not an object"),
        ('{"categories": [], "explanation": "x"}', "non-empty list"),
        ('{"categories": ["No Answer"]}', '"explanation" must be a string'),
        ('{"categories": [3], "explanation": "x"}', "unknown category 3"),
    ],
)
def test_analysis_replies_are_parsed_strictly(reply: str, problem: str) -> None:
    with pytest.raises(AnalysisParseError, match=re.escape(problem)):
        parse_analysis(reply)


def test_analysis_reply_without_a_fence_and_with_repeats() -> None:
    reply = '{"categories": ["No Answer", "no answer", "Ineffective Tool Call"], "explanation": ""}'
    assert parse_analysis(reply) == (["No Answer", "Ineffective Tool Call"], "")


def _paper_block(heading: str) -> str:
    """The code block under ``heading`` in the OmniGAIA paper, outer fences only."""
    lines = PAPER.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    fences = [i for i in range(start, len(lines)) if lines[i].strip().startswith("```")]
    opening = fences[0]
    # B.6 nests a ```json fence: its block closes at the fourth fence after the heading.
    closing = fences[3] if lines[fences[1]].strip() == "```json" else fences[1]
    return "\n".join(lines[opening + 1 : closing])


def test_prompts_are_the_papers_verbatim() -> None:
    judge = render(
        "omnigaia_judge", question="{question}", predicted="{predicted}", standard="{standard}"
    )
    assert judge == _paper_block("### B.1 Evaluation Prompt")
    names = ("question", "omni_modal_input", "annotated_solution", "answer", "trace_str")
    analysis = render("omnigaia_error_analysis", **{n: "{" + n + "}" for n in names})
    block = _paper_block("## B.6 Error Analysis Prompt")
    assert block == "Fine-grained Error Analysis Prompt\n\n" + analysis  # the box title is dropped


def test_templates_render_strictly() -> None:
    with pytest.raises(KeyError, match="standard"):
        render("omnigaia_judge", question="q", predicted="p")
    with pytest.raises(ValueError, match="no placeholder for extra"):
        render("omnigaia_judge", question="q", predicted="p", standard="s", extra="x")
    # Values are not templates themselves: a "$" in an answer is sent as it is.
    assert "Labeled Answer: $5 ${x}" in render(
        "omnigaia_judge", question="q", predicted="p", standard="$5 ${x}"
    )
    assert not load_template("omnigaia_judge").template.startswith("#")
