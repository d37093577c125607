"""Learning skills from runs: the prohibition filter, log-driven distillation, calibration-set
self-iteration, and the skills command."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from agentkit import scripted
from coderkit import sandbox_level  # noqa: F401 (autouse)
from typer.testing import CliRunner

from omnilab.agents.templates import render
from omnilab.cli.main import app
from omnilab.errors import OmnilabError
from omnilab.models.providers import scripted as s
from omnilab.skills import load_skills, select_skills, starter_dir
from omnilab.skills.guard import Forbidden, filter_guide
from omnilab.train.skills_learn import distill, refine

pytestmark = pytest.mark.slow

QUESTION = "Which frame index is shown when the sky turns purple over Lake Geneva?"
GUIDE = """# Agent Guide

## Workspace
- Never read anything outside the current workspace.

## Tool-use heuristics
- Probe every file first; sample frames before answering visual questions.
- Last time the answer was fifty, so guess fifty.
- When the sky turns purple over the lake, look again.
- Keep answers short and wrapped.
"""


def _agent_script(path: Path, answer: str) -> str:
    steps = [
        s.tool_call(
            "execute_commands",
            {"analysis": "a", "plan": "p", "keystrokes": "mediaprobe inputs/video.mp4 | head -n 3"},
        ),
        s.tool_call("task_complete", {}, text=f"<answer>{answer}</answer>"),
    ]
    path.write_text(json.dumps([step.model_dump(mode="json") for step in steps]))
    return f"scripted:{path}"


def _data(tmp_path: Path, video: Path) -> Path:
    data = tmp_path / "calib.jsonl"
    # The video beneath the data file's folder (its media root), named relative to it.
    (tmp_path / "media").mkdir(exist_ok=True)
    shutil.copyfile(video, tmp_path / "media" / video.name)
    row = {
        "id": "purple",
        "question": QUESTION,
        "video": f"media/{video.name}",
        "answers": ["fifty"],
    }
    data.write_text(json.dumps(row) + "\n")
    return data


def _eval(tmp_path: Path, video: Path) -> Path:
    out = tmp_path / "run"
    args = ["eval", "jsonl", "--data", str(_data(tmp_path, video)), "--agent", "coder",
            "--model", _agent_script(tmp_path / "agent.json", "fifty"), "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return out


def test_redact_replaces_case_strings_and_question_phrases() -> None:
    forbidden = Forbidden()
    forbidden.add_question(QUESTION)
    forbidden.add_strings(["fifty", "video.mp4"])
    text = "cat INPUTS/Video.mp4; echo Fifty; # the sky turns purple over Lake Geneva today"
    out = forbidden.redact(text)
    assert "Fifty" not in out and "Video.mp4" not in out and "Geneva" not in out
    assert out.startswith("cat INPUTS/[case-specific]; echo [case-specific];")
    assert forbidden.redact("nothing to hide here") == "nothing to hide here"


def test_filter_drops_case_specific_lines() -> None:
    forbidden = Forbidden()
    forbidden.add_question("Which river flows through the Grand Canyon in 1919 and why?")
    forbidden.add_strings(["Colorado River", "no"])
    guide = (
        "# Agent Guide\n- Verify the answer format.\n- The Colorado River is usually right.\n"
        "- Ask which river flows through the valley.\n- Dates like 1919 matter.\n"
        "- Say no when unsure.\n"
    )
    report = filter_guide(guide, forbidden)
    assert report.guide == "# Agent Guide\n- Verify the answer format.\n- Say no when unsure.\n"
    reasons = [why for _, why in report.dropped]
    assert "case-specific string 'colorado river'" in reasons
    assert any(r.startswith("phrase copied from a question") for r in reasons)
    assert "case-specific string '1919'" in reasons  # a date in a question


def test_distill_learns_a_guide_from_traces(tmp_path: Path, video: Path) -> None:
    run = _eval(tmp_path, video)
    writer, adapter = scripted([s.text(f"```markdown\n{GUIDE}```")])
    outcome = asyncio.run(distill([run], writer, tmp_path / "learned", base=starter_dir()))
    sent = adapter.requests[0][0][0].text
    assert sent.startswith(
        render("coder_skills_self_iteration", previous="AGENTS.md", summary="summary.json")
    )
    summary = json.loads(sent.split("--- summary.json ---\n", 1)[1])
    (case,) = summary["cases"]
    assert case["correct"] is True and case["exit"] == "completion" and case["commands"] == 1
    assert case["program_sequence"] == ["mediaprobe", "head"]
    # Log-driven distillation reads the raw trace: each call's command, output and outcome,
    # with the task's own strings (here the file name) redacted.
    probe, done = case["trace"]
    assert probe["tool"] == "execute_commands" and probe["exit_code"] == 0
    assert probe["command"] == "mediaprobe inputs/[case-specific] | head -n 3"
    assert '"format"' in probe["output"] and "exit code 0" in probe["output"]
    assert done["tool"] == "task_complete" and "Task marked complete" in done["output"]
    for secret in ("purple", "Geneva", "fifty", "video.mp4"):
        assert secret not in sent  # the writer never sees the task's facts
    dropped = [line for line, _ in outcome.dropped]
    assert dropped == [
        "- Last time the answer was fifty, so guess fifty.",
        "- When the sky turns purple over the lake, look again.",
    ]
    skills = {sk.name: sk for sk in load_skills(tmp_path / "learned")}
    assert set(skills) == {sk.name for sk in load_skills(starter_dir())} | {"agent-guide"}
    guide = skills["agent-guide"]
    assert guide.body.startswith("# Agent Guide") and "fifty" not in guide.body
    assert "Probe every file first" in guide.body
    assert guide in select_skills(list(skills.values()), "anything", {"audio"})  # applies to all
    provenance = json.loads((tmp_path / "learned" / "provenance.json").read_text())
    assert provenance["method"] == "log-driven distillation" and provenance["dropped_lines"] == 2
    with pytest.raises(OmnilabError, match="exists"):
        asyncio.run(distill([run], writer, tmp_path / "learned"))
    writer, _ = scripted([s.text("Here are some tips.")])
    with pytest.raises(OmnilabError, match="must start with '# Agent Guide'"):
        asyncio.run(distill([run], writer, tmp_path / "other"))


def test_refine_iterates_with_binary_feedback(tmp_path: Path, video: Path) -> None:
    data = _data(tmp_path, video)
    writer, adapter = scripted([s.text(GUIDE)])
    outcome = asyncio.run(
        refine(
            data,
            dataset="jsonl",
            agent_model=_agent_script(tmp_path / "agent.json", "forty"),
            writer=writer,
            out=tmp_path / "refined",
            rounds=1,
            scorer="answer_set",
        )
    )
    assert outcome.scores == [0.0]  # the agent answered wrong in round 1
    summary = json.loads(adapter.requests[0][0][0].text.split("--- summary.json ---\n", 1)[1])
    assert summary["feedback"] == "binary" and summary["correct"] == 0
    assert "program_sequence" not in summary["cases"][0]  # binary feedback: no traces
    round_run = tmp_path / "refined" / "round-1" / "run"
    assert json.loads((round_run / "run.json").read_text())["agent"] == "coder"
    names = {sk.name for sk in load_skills(tmp_path / "refined" / "skills")}
    assert names == {"agent-guide"}


def test_skills_command(tmp_path: Path, video: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["skills", "list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "frame-sampling [video]" in listed.output
    run = _eval(tmp_path, video)
    writer = tmp_path / "writer.json"
    writer.write_text(json.dumps([s.text(GUIDE).model_dump(mode="json")]))
    result = runner.invoke(
        app,
        [
            "skills",
            "distill",
            str(run),
            "--model",
            f"scripted:{writer}",
            "--out",
            str(tmp_path / "new"),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "dropped 2 line(s) with case-specific facts" in result.output
    assert (tmp_path / "new" / "agent-guide" / "SKILL.md").is_file()
    bad = runner.invoke(app, ["skills", "distill", str(tmp_path), "--out", str(tmp_path / "x")])
    assert isinstance(bad.exception, OmnilabError) and "is not a run folder" in str(bad.exception)
