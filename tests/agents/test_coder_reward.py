"""The Code-X reward (code-x-reward) on hand-made rollouts of the coder agent.

Each case is a scripted run in the real sandbox, so the trajectory is what the agent writes;
the expected rewards are worked out by hand from Table 10's weights.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agentkit import scripted
from coderkit import CoderRun, run_coder, sandbox_level  # noqa: F401 (sandbox_level: autouse)

from omnilab.agents import Budgets
from omnilab.bench.rescore import make_scorer, needs_trajectory
from omnilab.bench.scoring.code_x import CodeXReward, audit_tools
from omnilab.bench.scoring.code_x_rules import escapes, uses_network
from omnilab.bench.task import AnswerSet, Task
from omnilab.inputs import InputSet
from omnilab.models.providers import scripted as s
from omnilab.models.types import Message, ModelOutput, ToolCall

pytestmark = pytest.mark.slow

FRAME = "ffmpeg -loglevel error -ss 2 -i inputs/video.mp4 -frames:v 1 f.png"


def cmd(keystrokes: str, plan: str = "look") -> s.OutputStep:
    return s.tool_call(
        "execute_commands", {"analysis": "a", "plan": plan, "keystrokes": keystrokes}
    )


def finish(answer: str) -> s.OutputStep:
    return s.tool_call("task_complete", {}, text=f"<answer>{answer}</answer>")


def reward(run: CoderRun, task: Task) -> tuple[float, bool | None, dict[str, object]]:
    prediction = run.saved.final.text if run.saved.final else ""
    score = asyncio.run(CodeXReward().score(task, prediction, trajectory=run.saved))
    return score.value, score.correct, dict(score.details)


@pytest.fixture()
def task(video: Path) -> Task:
    return Task(
        id="t",
        dataset="test",
        question="Which frame?",
        files=tuple(InputSet.from_paths([video])),
        answers=AnswerSet(label="50"),
    )


def go(tmp_path: Path, video: Path, steps: list[s.OutputStep], name: str, **kw: object) -> CoderRun:
    model, _ = scripted(steps)
    return run_coder(tmp_path, model, [video], "Which frame?", name=name, **kw)  # type: ignore[arg-type]


def test_correct_with_the_modality_engaged(tmp_path: Path, video: Path, task: Task) -> None:
    run = go(tmp_path, video, [cmd(FRAME), finish("50")], "ok")
    value, correct, details = reward(run, task)
    # 2 tool calls (command, task_complete), none bad: 1.0
    assert correct is True and value == pytest.approx(1.0)
    assert details["exit_reason"] == "completion" and details["p_bad"] == 0.0


def test_wrong_answer_with_a_clean_exit_gets_the_format_bonus(
    tmp_path: Path, video: Path, task: Task
) -> None:
    run = go(tmp_path, video, [cmd(FRAME), finish("49")], "wrong")
    value, correct, _ = reward(run, task)
    assert correct is False and value == pytest.approx(0.2)


def test_plan_text_naming_ffmpeg_does_not_count_as_using_it(
    tmp_path: Path, video: Path, task: Task
) -> None:
    steps = [cmd("ls inputs", plan="then run ffmpeg and image_read"), finish("50")]
    value, correct, details = reward(go(tmp_path, video, steps, "plan"), task)
    # Right answer, but the video was never touched by a tool that ran: not gated-correct.
    # base = +0.2 (clean exit), r_mod = -0.3.
    assert correct is False and details["r_mod"] == -0.3
    assert value == pytest.approx(-0.1)


def test_output_redirection_is_not_an_escape(tmp_path: Path, video: Path, task: Task) -> None:
    steps = [cmd(f"{FRAME} > /dev/null 2>&1 && echo done 2>/dev/null"), finish("50")]
    value, correct, details = reward(go(tmp_path, video, steps, "redir"), task)
    assert details["n_escape"] == 0.0 and correct is True and value == pytest.approx(1.0)


def test_an_escape_zeroes_correctness_and_costs_a_bad_tool(
    tmp_path: Path, video: Path, task: Task
) -> None:
    steps = [cmd(FRAME), cmd("cat /etc/hostname; ls ground_truth"), finish("50")]
    value, correct, details = reward(go(tmp_path, video, steps, "escape"), task)
    # 3 tool calls, 1 escape: P_bad = 1/4; base = 0.2 (clean exit, no gate): 0.2 - 0.125
    assert correct is False and details["n_escape"] == 1.0
    assert "/etc/hostname" in str(details["escapes"]) and "ground_truth" in str(details["escapes"])
    assert value == pytest.approx(0.2 - 0.5 * 1 / 4)


def test_bad_tools_unparseable_disallowed_network_and_syntax(
    tmp_path: Path, video: Path, task: Task
) -> None:
    broken = ModelOutput(
        message=Message.assistant(
            "", tool_calls=[ToolCall(name="execute_commands", parse_error="x")]
        ),
        finish_reason="tool_calls",
    )
    steps = [
        s.OutputStep(output=broken),  # unparseable
        s.tool_call("web_search", {"q": "answer"}),  # disallowed tool
        cmd("curl http://example.com || true"),  # disallowed: a network primitive
        cmd("python3 -c 'print(('"),  # syntax failure in the reply
        cmd(FRAME),
        finish("50"),
    ]
    value, correct, details = reward(go(tmp_path, video, steps, "bad"), task)
    assert (details["n_unparseable"], details["n_disallowed"], details["n_syntax_fail"]) == (
        1.0,
        2.0,
        1.0,
    )
    # 6 tool calls, 4 bad: P_bad = 4/7; correct and engaged: 1.0 - 0.5 * 4/7
    assert correct is True and value == pytest.approx(1.0 - 0.5 * 4 / 7)


def test_removed_and_format_penalty(tmp_path: Path, video: Path, task: Task) -> None:
    run = go(tmp_path, video, [cmd(FRAME)] * 2, "limit", budgets=Budgets(max_turns=2))
    value, _, details = reward(run, task)
    assert details["removed"] == "yes" and details["exit_reason"] == "step_limit" and value == 0.0
    run = go(
        tmp_path,
        video,
        [cmd(FRAME), s.text("no idea")] + [s.text("still")] * 2,
        "quiet",
        max_reminders=1,
    )
    value, _, details = reward(run, task)
    # No answer, but the exit (no tool call) is not a removal: the format penalty, -0.2.
    assert details["removed"] == "no" and value == pytest.approx(-0.2)


def test_rule_helpers_and_registry() -> None:
    assert escapes("ffmpeg -i a.mp4 -f null /dev/null 2>/dev/stderr") == []
    assert escapes("#!/usr/bin/env python3\nprint(1)") == []
    assert escapes("cat /ws/a.txt /ws/../etc/x", workspace="/ws") == ["/ws/../etc/x"]
    assert escapes("grep x data/all_final.jsonl") == ["all_final.jsonl"]
    assert escapes("cat answers.gold") == ["answers.gold"]
    assert uses_network("wget -q x") and uses_network("see https://a.b")
    assert not uses_network("rsync_like_name --sync func")
    scorer = make_scorer("code-x-reward")
    assert needs_trajectory(scorer) and isinstance(scorer, CodeXReward)


def test_audit_counts_only_commands_that_ran(tmp_path: Path, video: Path) -> None:
    two = ModelOutput(
        message=Message.assistant(
            "",
            tool_calls=[
                ToolCall(
                    name="execute_commands",
                    arguments={"analysis": "a", "plan": "p", "keystrokes": "true"},
                ),
                ToolCall(
                    name="execute_commands",
                    arguments={"analysis": "a", "plan": "p", "keystrokes": FRAME},
                ),
            ],
        ),
        finish_reason="tool_calls",
    )
    run = go(tmp_path, video, [s.OutputStep(output=two), finish("50")], "refused")
    audit = audit_tools(run.saved)
    assert audit.commands == ["true"]  # the second call was refused (one per turn): not run
