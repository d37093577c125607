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

VERDICT = (
    'Looks at the frame, then misreads it.\n```json\n{"steps": [{"step": 1, "reward": 1, "reason": '
    '"probe"}, {"step": 2, "reward": -1, "reason": "misread"}, {"step": 3, "reward": -1, "reason": '
    '"depends on step 2"}], "primary_error": "Video Perception and Extraction Error"}\n```'
)


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


def test_judge_scores_each_step_and_writes_events(tmp_path: Path, video: Path) -> None:
    model, _ = scripted(_steps())
    run = run_coder(tmp_path, model, [video], "Which frame?")
    judge, adapter = scripted([s.text(VERDICT)])
    score = asyncio.run(
        ProcessJudge(judge).score(_task(video), "<answer>49</answer>", trajectory=run.saved)
    )
    assert score.value == pytest.approx(-1 / 3) and score.correct is False
    assert score.details["steps"] == "+1 -1 -1"
    assert score.details["primary_error"] == "Video Perception and Extraction Error"
    prompt = adapter.requests[0][0][0].text
    assert "Trajectory (3 assistant steps):" in prompt and "### Step 2 (assistant)" in prompt
    assert '-> execute_commands({"analysis": "b"' in prompt and "Reference answer: 50" in prompt
    assert "once a step is labeled -1, dependent later assistant steps remain -1" in prompt
    assert '"file": "inputs/video.mp4"' in prompt  # the tool output is there as evidence
    events = [
        EventAdapter.validate_json(line)
        for line in run.trajectory.with_suffix(".process.jsonl").read_text().splitlines()
    ]
    calls = [c.id for c in run.saved.model_calls]
    assert all(isinstance(e, StepScore) and e.name == "process_reward" for e in events)
    assert [(e.target_id, e.value) for e in events] == list(
        zip(calls, [1.0, -1.0, -1.0], strict=True)
    )  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I think it is fine.", "holds no JSON object"),
        ('```json\n{"steps": [{"step": 1, "reward": 1}]}\n```', r"scored steps \[1\], not 1..3"),
        (
            '```json\n{"steps": [{"step": 1, "reward": 2}, {"step": 2, "reward": 0}, {"step": 3, "reward": 0}]}\n```',
            "not 1..3",
        ),
        ('```json\n{"verdict": 1}\n```', "no 'steps' list"),
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
    judge.write_text(json.dumps([s.text(VERDICT).model_dump(mode="json")]))
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
