"""The coder agent driven by scripted models, with a real sandboxed shell.

Each tool is used as a model would use it: commands in the persistent shell (ffmpeg from the
toolbox extracting a frame), image_read of that frame (shown to the model as an image), and
task_complete; the reminders, exits and rollout artifacts are checked from the trajectory.
"""

from __future__ import annotations

import io
import json
import os
import time
import uuid
from pathlib import Path

import pytest
from agentkit import VISION, scripted
from coderkit import processes_with, run_coder, sandbox_level, use_level  # noqa: F401 (sandbox_level: autouse)
from PIL import Image as PILImage

from omnilab.agents import AgentConfigError, Budgets, get_agent
from omnilab.agents.task_info import TaskInfo
from omnilab.agents.templates import render
from omnilab.content import Image
from omnilab.media import synth
from omnilab.models.providers import scripted as s
from omnilab.models.types import Message as Msg
from omnilab.models.types import ModelOutput, ToolCall

pytestmark = pytest.mark.slow


def cmd(keystrokes: str, **extra: object) -> s.OutputStep:
    return s.tool_call(
        "execute_commands",
        {"analysis": "looking", "plan": "run a command", "keystrokes": keystrokes, **extra},
    )


def done(answer: str, *, in_text: bool = True) -> s.OutputStep:
    if in_text:
        return s.tool_call("task_complete", {}, text=f"<answer>{answer}</answer>")
    return s.tool_call("task_complete", {"answer": f"<answer>{answer}</answer>"})


def test_ffmpeg_frame_then_image_read_then_task_complete(tmp_path: Path, video: Path) -> None:
    model, adapter = scripted(
        [
            cmd(
                "mkdir -p frames && ffmpeg -loglevel error -ss 2 -i inputs/video.mp4 "
                "-frames:v 1 frames/f2.png && mediaprobe inputs/video.mp4 | head -n 4 && pwd"
            ),
            s.tool_call("image_read", {"path": "frames/f2.png"}),
            done("50"),
        ],
        caps=VISION,
    )
    run = run_coder(tmp_path, model, [video], "Which frame index is shown at 2 s?", max_edge=160)
    first, second, third = run.saved.tool_results
    assert first.result.error is None and first.result.metadata["exit_code"] == 0
    assert '"format"' in first.result.text and "exit code 0" in first.result.text
    assert (run.workspace / "frames" / "f2.png").is_file()
    assert second.result.text.startswith("Loaded frames/f2.png (320x240, shown at 160x120)")
    # The image went into the conversation as a native image (a user message after the ack).
    sent, _tools, _ = adapter.requests[2]
    images = [p for m in sent for p in m.content if isinstance(p, Image)]
    assert len(images) == 1
    shown = PILImage.open(io.BytesIO(images[0].read_bytes()))
    assert shown.size == (160, 120)
    assert synth.read_index(shown) == 50  # frame 50 = 2 s at 25 fps
    assert third.name == "task_complete"
    assert run.saved.answer == "50" and run.saved.status == "answered"
    assert run.exit_reason() == "completion"
    # Table 12 artifacts, outside the workspace.
    rollout = json.loads((run.artifacts / "rollout.json").read_text())
    assert rollout["answer"] == "50" and rollout["exit_reason"] == "completion"
    assert {"path": "frames/f2.png", "size": (run.workspace / "frames/f2.png").stat().st_size} in (
        rollout["workspace_outputs"]
    )
    assert rollout["image_references"][0]["workspace_path"] == "frames/f2.png"
    assert (run.artifacts / rollout["image_references"][0]["file"]).is_file()
    assert rollout["reward_metadata"]["commands_run"] == 1
    assert rollout["reward_metadata"]["clean_completion"] is True
    assert any(m["role"] == "tool" for m in rollout["messages"])


def test_prompt_stages_files_and_hides_host_paths(tmp_path: Path, video: Path) -> None:
    model, adapter = scripted([done("x")])
    run = run_coder(tmp_path, model, [video], "How long is it?")
    system, user = adapter.requests[0][0][:2]
    assert (run.workspace / "inputs" / "video.mp4").read_bytes() == video.read_bytes()
    assert "- inputs/video.mp4" in user.text and "How long is it?" in user.text
    assert str(video.parent) not in user.text + system.text
    assert render("coder_network_off").strip() in user.text
    assert render("coder_network_on").strip() not in user.text
    assert "You are evaluating a omni-modal benchmark item" in user.text
    assert "- ffmpeg " in system.text and "- mediaprobe " in system.text  # the toolbox listing
    # With the network on, the paper's network rules are used instead.
    model, adapter = scripted([done("x")])
    run_coder(tmp_path, model, [video], "q", network=True, name="net")
    assert render("coder_network_on").strip() in adapter.requests[0][0][1].text


def test_mcq_gets_the_papers_lvomnibench_body(tmp_path: Path, image_file: Path) -> None:
    model, adapter = scripted([done("B")])
    info = TaskInfo(benchmark="mcq", options={"A": "red", "B": "blue"})
    run_coder(tmp_path, model, [image_file], "Which colour?", metadata=info)
    user = adapter.requests[0][0][1].text
    assert "You are evaluating a multiple-choice benchmark item" in user
    assert "Question:\nWhich colour?\nOptions:\nA. red\nB. blue\nSelect the best answer" in user


def test_timeout_kills_the_command_and_keeps_the_shell(tmp_path: Path) -> None:
    model, _ = scripted(
        [
            cmd("export KEEP=kept; cd inputs 2>/dev/null || mkdir -p sub && cd sub"),
            cmd("sleep 30; echo never", wait_seconds=1),
            cmd("echo $KEEP $(basename $PWD)"),
            done("ok"),
        ]
    )
    run = run_coder(tmp_path, model, [], "q")
    _, slow, after, _ = run.saved.tool_results
    assert slow.result.metadata["timed_out"] is True
    assert "ran past its time limit" in slow.result.text and slow.duration_s < 10
    assert after.result.text.startswith("kept sub") and not after.result.metadata["state_lost"]


def test_dead_shell_is_restarted_with_a_warning(tmp_path: Path) -> None:
    model, _ = scripted(
        [cmd("export KEEP=kept"), cmd("kill -9 $$"), cmd("echo [$KEEP]"), done("ok")]
    )
    run = run_coder(tmp_path, model, [], "q")
    _, killed, after, _ = run.saved.tool_results
    assert killed.result.metadata["state_lost"] is True
    assert "the shell died and was restarted" in killed.result.text
    assert after.result.text.startswith("[]")  # the variable went with the old shell
    # Said once: the next command, which starts the new shell, does not repeat it.
    assert after.result.metadata["state_lost"] is True
    assert "restarted" not in after.result.text
    assert run.saved.status == "answered"


def test_the_repeat_notice_is_omnilabs_and_can_be_switched_off(tmp_path: Path) -> None:
    notice = "with exactly these arguments"
    steps = [cmd("echo same")] * 3 + [s.tool_call("task_complete", {}, text="<answer>x</answer>")]
    model, _ = scripted(steps)
    on = run_coder(tmp_path, model, [], "q", name="on")
    assert notice in on.saved.tool_results[2].result.text
    model, _ = scripted(steps)
    off = run_coder(tmp_path, model, [], "q", name="off", repeat_notice=False)
    assert all(notice not in r.result.text for r in off.saved.tool_results)


def test_merged_output_is_cut_as_one_stream(tmp_path: Path) -> None:
    line = "python3 -c \"import sys; print('@' * 5000); print('^' * 5000, file=sys.stderr)\""
    steps = [
        cmd(line),
        cmd("cd /; echo moved"),
        cmd("pwd"),
        s.tool_call("task_complete", {}, text="<answer>x</answer>"),
    ]
    model, _ = scripted(steps)
    split = run_coder(tmp_path, model, [], "q", name="split", output_bytes=1000)
    text = split.saved.tool_results[0].result.text
    assert 900 <= text.count("@") <= 1000 and 900 <= text.count("^") <= 1000
    model, _ = scripted(steps)
    merged = run_coder(
        tmp_path, model, [], "q", name="merged", output_bytes=1000, merge_output=True
    )
    first, _, pwd, _ = merged.saved.tool_results
    # One stream of 10,000 characters kept head and tail: 1,000 in all, @ first, ^ last.
    assert 900 <= first.result.text.count("@") + first.result.text.count("^") <= 1000
    assert first.result.text.index("@") < first.result.text.index("^")
    assert pwd.result.text.startswith("/\n")  # braces, not a subshell: cd persists


def test_reminders_for_no_tool_call_and_missing_answer(tmp_path: Path) -> None:
    model, _ = scripted(
        [
            s.text("I think I know."),
            s.tool_call("task_complete", {}),
            done("42", in_text=False),
        ]
    )
    run = run_coder(tmp_path, model, [], "q")
    added = [m.text for m in run.added()[2:]]
    assert added == [render("coder_reminder_no_tool"), render("coder_reminder_no_answer")]
    assert run.saved.answer == "42" and run.exit_reason() == "completion"


def test_task_complete_twice_without_answer_scores_empty(tmp_path: Path) -> None:
    model, _ = scripted([s.tool_call("task_complete", {}), s.tool_call("task_complete", {})])
    run = run_coder(tmp_path, model, [], "q")
    assert run.saved.answer is None and run.saved.status == "no_answer"
    assert run.exit_reason() == "no_answer"


def test_an_earlier_wrapped_answer_counts_at_task_complete(tmp_path: Path) -> None:
    model, _ = scripted(
        [
            s.tool_call(
                "execute_commands",
                {"analysis": "a", "plan": "p", "keystrokes": "true"},
                text="So far: <answer>7</answer>",
            ),
            s.tool_call("task_complete", {}),
        ]
    )
    assert run_coder(tmp_path, model, [], "q").saved.answer == "7"


def test_format_reminder_after_malformed_calls(tmp_path: Path) -> None:
    broken = ModelOutput(
        message=Msg.assistant(
            "", tool_calls=[ToolCall(name="execute_commands", parse_error="Expecting ','")]
        ),
        finish_reason="tool_calls",
    )
    model, _ = scripted(
        [
            s.OutputStep(output=broken),
            s.tool_call("run_shell", {"cmd": "ls"}),
            s.tool_call("execute_commands", {"keystrokes": "ls"}),  # analysis and plan missing
            done("ok"),
        ]
    )
    run = run_coder(tmp_path, model, [], "q")
    codes = [r.result.error.code for r in run.saved.tool_results[:3] if r.result.error]
    assert codes == ["INVALID_ARGS", "UNKNOWN_TOOL", "INVALID_ARGS"]
    reminders = [m.text for m in run.added()[2:]]
    assert len(reminders) == 3 and all(
        r.startswith("Your last tool call could not be read") for r in reminders
    )
    assert run.saved.answer == "ok"


def test_step_limit_and_no_tool_exhaustion_say_why(tmp_path: Path) -> None:
    model, _ = scripted([cmd("true")] * 3)
    run = run_coder(tmp_path, model, [], "q", budgets=Budgets(max_turns=3), name="steps")
    assert run.exit_reason() == "step_limit" and run.saved.status == "budget"
    model, _ = scripted([s.text("hmm")] * 3)
    run = run_coder(tmp_path, model, [], "q", max_reminders=2, name="quiet")
    assert run.exit_reason() == "no_tool_call"
    assert len(run.added()) == 4  # system, task, two reminders


def test_one_call_per_turn_and_image_read_refuses_links(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(b"not for the model")
    link = f"ln -s {tmp_path}/secret.png link.png"
    two = ModelOutput(
        message=Msg.assistant(
            "",
            tool_calls=[
                ToolCall(
                    name="execute_commands",
                    arguments={"analysis": "a", "plan": "p", "keystrokes": link},
                ),
                ToolCall(name="image_read", arguments={"path": "link.png"}),
            ],
        ),
        finish_reason="tool_calls",
    )
    model, _ = scripted(
        [
            s.OutputStep(output=two),
            s.tool_call("image_read", {"path": "link.png"}),
            s.tool_call("image_read", {"path": "../secret.png"}),
            done("ok"),
        ]
    )
    run = run_coder(tmp_path, model, [], "q")
    results = run.saved.tool_results
    assert results[0].result.error is None  # the link was made...
    assert results[1].result.error is not None
    assert results[1].result.error.code == "TOO_MANY_CALLS"  # ...one call per turn
    assert "link" in results[2].result.text and results[2].result.error is not None
    assert "leaves the workspace" in results[3].result.text


def test_options_are_checked() -> None:
    with pytest.raises(AgentConfigError, match="bad coder option max_edge"):
        get_agent("coder", max_edge=1)
    with pytest.raises(AgentConfigError, match="max_command_timeout"):
        get_agent("coder", command_timeout=100, max_command_timeout=10)


@pytest.mark.parametrize("level", ["auto", "process"])
def test_timeout_leaves_no_grandchildren_at_each_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: str
) -> None:
    use_level(level, monkeypatch)
    token = f"coder-{uuid.uuid4().hex}"
    spawn = (
        "python3 -c 'import subprocess, time; "
        f'c = subprocess.Popen(["python3", "-c", "import time; time.sleep(300)", "{token}-child"]); '
        f'open("started", "w").write(str(c.pid)); '
        f"time.sleep(300)' {token}-parent"
    )
    model, _ = scripted(
        [cmd("export KEEP=kept"), cmd(spawn, wait_seconds=1.5), cmd("echo $KEEP"), done("ok")]
    )
    run = run_coder(tmp_path, model, [], "q")
    first, slow, after, _ = run.saved.tool_results
    if level == "process":  # the level's caveat is told once, not with every command
        assert "[sandbox] isolation level 'process'" in first.result.text
        assert "[sandbox]" not in after.result.text
    assert slow.result.metadata["timed_out"] is True
    # The level use_level chose (auto: the strongest here, or CODER_TEST_ISOLATION's).
    assert slow.result.metadata["isolation"] == os.environ["OMNILAB_SANDBOX__ISOLATION"]
    assert after.result.text.startswith("kept")  # the shell survived
    assert (run.workspace / "started").read_text().isdigit()  # the grandchild did start
    deadline = time.monotonic() + 5
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(token) == []  # the command's child and grandchild are gone


def _overflow_run(tmp_path: Path, name: str, **options: object) -> tuple[object, list[object]]:
    from omnilab.models import get_model
    from omnilab.models.fake_server import (
        FakeOpenAIServer,
        reply_error,
        reply_text,
        reply_tool_calls,
    )

    step = {"analysis": "a", "plan": "p", "keystrokes": "echo hi > note.txt"}
    with FakeOpenAIServer() as server:
        server.push(
            reply_tool_calls(("execute_commands", step)),
            reply_error(400, "This model's maximum context length is 8192 tokens"),
            reply_text("Wrote note.txt with hi; the answer is hi."),
            reply_tool_calls(("task_complete", {"answer": "<answer>hi</answer>"})),
        )
        model = get_model(f"vllm:test@{server.base_url}", cache=False, max_attempts=1)
        run = run_coder(tmp_path, model, [], "What is in the note?", name=name, **options)
        bodies = [server.body(i) for i in range(len(server.chat_requests))]
    return run, bodies


def test_a_context_overflow_is_summarized_and_the_step_tried_again(tmp_path: Path) -> None:
    run, bodies = _overflow_run(tmp_path, "kira", summarize_on_overflow=True)
    summary_request = bodies[2]["messages"]
    assert "tools" not in bodies[2] and len(summary_request) == 1
    text = summary_request[0]["content"]
    assert text.startswith("You are summarizing a coding agent's progress")
    assert "=== Original task ===" in text and "echo hi > note.txt" in text
    retried = bodies[3]["messages"]
    assert [m["role"] for m in retried] == ["system", "user"]
    assert "Wrote note.txt with hi" in retried[1]["content"]
    assert "(your earlier conversation was compressed)" in retried[1]["content"]
    saved = run.saved  # type: ignore[attr-defined]
    assert saved.answer == "hi" and run.exit_reason() == "completion"  # type: ignore[attr-defined]
    assert [e.kind for e in saved.events].count("context_edit") == 1


def test_without_the_summary_a_context_overflow_ends_the_run(tmp_path: Path) -> None:
    import asyncio

    from omnilab.bench.scoring.code_x import CodeXReward
    from omnilab.bench.task import AnswerSet, Task

    run, bodies = _overflow_run(tmp_path, "plain")
    assert len(bodies) == 2 and run.saved.status == "error"  # type: ignore[attr-defined]
    # The Code-X reward reads it as a context overflow without an answer: removed.
    task = Task(id="t", dataset="test", question="q", answers=AnswerSet(label="hi"))
    score = asyncio.run(CodeXReward().score(task, "", trajectory=run.saved))  # type: ignore[attr-defined]
    assert score.details["exit_reason"] == "context_overflow" and score.details["removed"] == "yes"


def test_the_kira_tool_schemas_and_system_prompt(tmp_path: Path, video: Path) -> None:
    from omnilab.agents.coder.tools import kira_schemas

    frame = "ffmpeg -loglevel error -ss 1 -i inputs/video.mp4 -frames:v 1 f.png"
    model, adapter = scripted(
        [
            s.tool_call(
                "execute_commands",
                {"analysis": "a", "plan": "p", "keystrokes": frame, "duration": 30},
            ),
            s.tool_call(
                "image_read", {"file_path": "f.png", "image_read_instruction": "count the bars"}
            ),
            s.tool_call("task_complete", {}, text="<answer>3</answer>"),
        ],
        caps=VISION,
    )
    run = run_coder(tmp_path, model, [video], "How many bars?", tool_schema="kira")
    messages, tools, _ = adapter.requests[0]
    assert messages[0].text.startswith("You are an autonomous coding agent solving a benchmark")
    assert "terminal output is capped at 30 KB" in messages[0].text
    specs = kira_schemas()
    assert [(t.name, t.description, t.parameters) for t in tools] == [
        (n, specs[n]["description"], specs[n]["parameters"])
        for n in ("execute_commands", "image_read", "task_complete")
    ]
    ran, looked, done = run.saved.tool_results
    assert ran.result.error is None and ran.result.metadata["ran"] is True
    assert looked.result.error is None and "Instruction: count the bars" in looked.result.text
    assert done.result.error is None
    assert run.saved.answer == "3" and run.exit_reason() == "completion"


def test_the_code_x_omnigaia_presets_agent_options_run_together(tmp_path: Path) -> None:
    from omnilab.bench.protocols import get_protocol

    options = dict(get_protocol("code-x-omnigaia").agent_options)
    big = "head -c 50000 /dev/zero | tr '\\0' x; echo done >&2"
    steps = [
        s.tool_call("execute_commands", {"analysis": "a", "plan": "p", "keystrokes": big}),
        s.tool_call(
            "execute_commands",
            {"analysis": "a", "plan": "p", "keystrokes": "sleep 3", "duration": 1},
        ),
        s.tool_call("task_complete", {}, text="<answer>x</answer>"),
    ]
    model, adapter = scripted(steps)
    run = run_coder(tmp_path, model, [], "q", **options)
    long, slept, done = run.saved.tool_results
    # one merged stream, 30,000 bytes kept head and tail (the KIRA shell's cap)
    assert 29900 <= long.result.text.count("x") <= 30000 and "done" in long.result.text
    assert slept.result.metadata["timed_out"] is True  # duration 1 s
    assert done.result.error is None and run.saved.answer == "x"
    assert adapter.requests[0][0][0].text.startswith("You are an autonomous coding agent")
