"""The step-level process judge (code-x-process): prompt, parsing, step-score events, omnilab score."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from agentkit import scripted
from coderkit import run_coder, sandbox_level  # noqa: F401 (sandbox_level: autouse)
from typer.testing import CliRunner

from omnilab.bench.rescore import make_scorer
from omnilab.bench.scoring.code_x_process import ProcessJudge
from omnilab.bench.task import AnswerSet, Task
from omnilab.cli.main import app
from omnilab.inputs import InputSet
from omnilab.models.providers import scripted as s
from omnilab.trajectory import EventAdapter, StepScore

pytestmark = pytest.mark.slow


def step(reward: int, reason: str = "r") -> str:
    return f'Judged.\n```json\n{{"reward": {reward}, "reason": "{reason}"}}\n```'


ERROR = '```json\n{"primary_error": "Video Perception and Extraction Error"}\n```'
VERDICT = [step(1, "probe"), step(-1, "misread"), step(-1, "depends on step 2"), ERROR]
"""One reply per step, then the error type of the wrong answer."""


def _steps() -> list[s.OutputStep]:
    return [
        s.tool_call(
            "execute_commands",
            {
                "analysis": "a",
                "plan": "probe",
                "keystrokes": "mediaprobe inputs/video.mp4 | head -n 2",
            },
        ),
        s.tool_call(
            "execute_commands", {"analysis": "b", "plan": "count", "keystrokes": "echo 49"}
        ),
        s.tool_call("task_complete", {}, text="<answer>49</answer>"),
    ]


def _task(video: Path) -> Task:
    files = tuple(InputSet.from_paths([video]))
    return Task(
        id="t", dataset="jsonl", question="Which frame?", files=files, answers=AnswerSet(label="50")
    )


def test_judge_scores_each_step_without_hindsight_and_writes_events(
    tmp_path: Path, video: Path
) -> None:
    model, _ = scripted(_steps())
    run = run_coder(tmp_path, model, [video], "Which frame?")
    judge, adapter = scripted([s.text(r) for r in VERDICT])
    score = asyncio.run(
        ProcessJudge(judge).score(_task(video), "<answer>49</answer>", trajectory=run.saved)
    )
    assert score.value == pytest.approx(-1 / 3) and score.correct is False
    assert score.details["steps"] == "+1 -1 -1"
    assert score.details["primary_error"] == "Video Perception and Extraction Error"
    prompts = [request[0][0].text for request in adapter.requests]
    assert len(prompts) == 4  # one per step, then the error type
    first, second, third, error = prompts
    # Table 9: each step sees only what was visible up to it (no hindsight).
    assert "Judge the last step shown, Step 1" in first and "### Step 1 (assistant)" in first
    assert "### Step 2" not in first and '"file": "inputs/video.mp4"' not in first
    assert "once a step is labeled -1, dependent later assistant steps remain -1" in first
    assert '"file": "inputs/video.mp4"' in second  # step 1's output is evidence for step 2
    assert '-> execute_commands({"analysis": "b"' in second and "### Step 3" not in second
    assert "step 1: +1 step 2: -1" in third  # earlier rewards, for error propagation
    for prompt in (first, second, third):
        assert "Reference answer" not in prompt and "final answer:" not in prompt
    assert "Reference answer: 50" in error and "The agent's final answer: 49" in error
    events = [
        EventAdapter.validate_json(line)
        for line in run.trajectory.with_suffix(".process.jsonl").read_text().splitlines()
    ]
    calls = [c.id for c in run.saved.model_calls]
    assert all(isinstance(e, StepScore) and e.name == "process_reward" for e in events)
    assert [(e.target_id, e.value) for e in events] == list(
        zip(calls, [1.0, -1.0, -1.0], strict=True)
    )  # type: ignore[union-attr]


def test_a_right_answer_asks_no_error_type(tmp_path: Path, video: Path) -> None:
    steps = [*_steps()[:2], s.tool_call("task_complete", {}, text="<answer>50</answer>")]
    model, _ = scripted(steps)
    run = run_coder(tmp_path, model, [video], "Which frame?")
    judge, adapter = scripted([s.text(step(1)) for _ in range(3)])
    score = asyncio.run(
        ProcessJudge(judge).score(_task(video), "<answer>50</answer>", trajectory=run.saved)
    )
    assert len(adapter.requests) == 3 and score.details["primary_error"] is None
    assert score.value == pytest.approx(1.0) and score.correct is True


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I think it is fine.", "holds no JSON object"),
        ('```json\n{"reward": 2}\n```', "reward 2, not -1, 0 or 1"),
        ('```json\n{"verdict": 1}\n```', "reward None"),
        ("```json\n[1]\n```", "holds no JSON object"),
    ],
)
def test_bad_judge_replies_are_errors(
    tmp_path: Path, video: Path, reply: str, message: str
) -> None:
    model, _ = scripted(_steps())
    run = run_coder(tmp_path, model, [video], "Which frame?")
    judge, _ = scripted([s.text(reply)])
    with pytest.raises(ValueError, match=message):
        asyncio.run(ProcessJudge(judge).score(_task(video), "", trajectory=run.saved))


def test_omnilab_score_with_the_process_judge(tmp_path: Path, video: Path) -> None:
    data = tmp_path / "tasks.jsonl"
    data.write_text(
        json.dumps({"id": "t", "question": "Which frame?", "video": str(video), "answers": ["50"]})
        + "\n"
    )
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps([step.model_dump(mode="json") for step in _steps()]))
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps([s.text(r).model_dump(mode="json") for r in VERDICT]))
    runner = CliRunner()
    out = tmp_path / "run"
    args = [
        "eval",
        "jsonl",
        "--data",
        str(data),
        "--agent",
        "coder",
        "--model",
        f"scripted:{agent}",
        "--out",
        str(out),
        "--media-root",
        str(video.parent),  # the session's video, named by its absolute path
    ]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(
        app,
        ["score", str(out), "--scorer", "code-x-process", "--judge", f"scripted:{judge}"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert ["t", "-0.333", "no"] in [line.split()[:3] for line in result.output.splitlines()]
    assert (out / "trajectories" / "t.process.jsonl").is_file()
    assert isinstance(make_scorer("code-x-process", [scripted([])[0]]), ProcessJudge)
