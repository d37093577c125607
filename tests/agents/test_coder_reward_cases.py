"""The reward cases of issue 36, each with the value the Code-X paper's rule gives (§3.2, H.1,
Table 10) and, where the paper is vague, the authors' released grader (Dongping-Chen/OmniCoding
``src/omnicoding/rl/reward.py``). Each case is a scripted run of the coder agent in the real
sandbox, scored from the trajectory it wrote."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agentkit import scripted
from coderkit import CoderRun, run_coder, sandbox_level  # noqa: F401 (sandbox_level: autouse)

from omnilab.agents import Budgets
from omnilab.bench.executor import prediction_text
from omnilab.bench.scoring.code_x import CodeXReward
from omnilab.bench.task import AnswerSet, Task
from omnilab.inputs import InputSet
from omnilab.models.providers import scripted as s
from omnilab.models.types import Message, ModelOutput, ToolCall

pytestmark = pytest.mark.slow

FRAME = "ffmpeg -loglevel error -ss 2 -i inputs/video.mp4 -frames:v 1 f.png"


def cmd(keystrokes: str, *, text: str = "") -> s.OutputStep:
    return s.tool_call(
        "execute_commands", {"analysis": "a", "plan": "p", "keystrokes": keystrokes}, text=text
    )


def finish(answer: str) -> s.OutputStep:
    return s.tool_call("task_complete", {}, text=f"<answer>{answer}</answer>")


def task_for(files: list[Path], label: str = "50") -> Task:
    return Task(
        id="t",
        dataset="test",
        question="Which frame?",
        files=tuple(InputSet.from_paths(files)),
        answers=AnswerSet(label=label),
    )


def score(run: CoderRun, task: Task) -> tuple[float, bool | None, dict[str, object]]:
    got = asyncio.run(CodeXReward().score(task, prediction_text(run.saved), trajectory=run.saved))
    return got.value, got.correct, dict(got.details)


def go(
    tmp_path: Path, files: list[Path], steps: list[s.OutputStep], name: str, **kw: object
) -> CoderRun:
    model, _ = scripted(steps)
    return run_coder(tmp_path, model, files, "Which frame?", name=name, **kw)  # type: ignore[arg-type]


def test_case_1_correct_with_the_modality_engaged_is_1(tmp_path: Path, video: Path) -> None:
    value, correct, _ = score(
        go(tmp_path, [video], [cmd(FRAME), finish("50")], "c1"), task_for([video])
    )
    assert correct is True and value == pytest.approx(1.0)


def test_case_2_wrong_answer_with_a_clean_exit_is_0_2(tmp_path: Path, video: Path) -> None:
    value, correct, _ = score(
        go(tmp_path, [video], [cmd(FRAME), finish("49")], "c2"), task_for([video])
    )
    assert correct is False and value == pytest.approx(0.2)


def test_case_3_right_answer_without_touching_the_video_is_minus_0_1(
    tmp_path: Path, video: Path
) -> None:
    run = go(tmp_path, [video], [cmd("ls inputs"), finish("50")], "c3")
    value, correct, details = score(run, task_for([video]))
    # Not gated (no video tool): base +0.2 (clean exit), r_mod -0.3.
    assert correct is False and details["r_mod"] == -0.3 and value == pytest.approx(-0.1)


def test_case_4_three_bad_calls_of_five_is_0_75(tmp_path: Path, video: Path) -> None:
    broken = ModelOutput(
        message=Message.assistant(
            "", tool_calls=[ToolCall(name="execute_commands", parse_error="x")]
        ),
        finish_reason="tool_calls",
    )
    steps = [
        cmd(FRAME),
        s.OutputStep(output=broken),  # unparseable
        s.tool_call("web_search", {"q": "frame"}),  # disallowed
        cmd("python3 -c 'print(('"),  # syntax failure
        finish("50"),
    ]
    value, correct, details = score(go(tmp_path, [video], steps, "c4"), task_for([video]))
    # 5 tool calls, 3 bad: 1.0 - 0.5 * 3 / (1 + 5)
    assert details["n_tool"] == 5.0 and details["p_bad"] == pytest.approx(0.5)
    assert correct is True and value == pytest.approx(0.75)


def test_case_5_step_limit_without_an_answer_is_removed(tmp_path: Path, video: Path) -> None:
    run = go(tmp_path, [video], [cmd(FRAME)] * 2, "c5", budgets=Budgets(max_turns=2))
    value, _, details = score(run, task_for([video]))
    assert details["removed"] == "yes" and details["exit_reason"] == "step_limit"
    assert value == 0.0 and run.saved.answer is None


def test_case_6_step_limit_after_an_earlier_correct_answer_is_1(
    tmp_path: Path, video: Path
) -> None:
    steps = [cmd(FRAME, text="It is <answer>50</answer>; checking once more."), cmd("ls")]
    run = go(tmp_path, [video], steps, "c6", budgets=Budgets(max_turns=2))
    value, correct, details = score(run, task_for([video]))
    assert details["exit_reason"] == "step_limit" and details["removed"] == "no"
    assert correct is True and value == pytest.approx(1.0)
    # The benchmark answer is that wrapper too (the last one the model wrote).
    assert run.saved.answer == "50" and "<answer>50</answer>" in prediction_text(run.saved)


def test_the_last_of_several_answers_counts(tmp_path: Path, video: Path) -> None:
    steps = [cmd(FRAME, text="<answer>50</answer>"), cmd("ls", text="No: <answer>49</answer>")]
    run = go(tmp_path, [video], steps, "last", budgets=Budgets(max_turns=2))
    value, correct, details = score(run, task_for([video]))
    assert details["removed"] == "no" and correct is False and run.saved.answer == "49"
    assert value == pytest.approx(-0.2)  # wrong, and a step-limit exit is not clean


def test_case_7_a_frame_written_to_tmp_is_not_an_escape(tmp_path: Path, video: Path) -> None:
    frame = "/tmp/omnilab-i36-frame.png"
    steps = [
        cmd(
            f"ffmpeg -loglevel error -y -ss 2 -i inputs/video.mp4 -frames:v 1 {frame}; rm -f {frame}"
        ),
        cmd('python3 -c "print(10 /2)"'),  # arithmetic, not the path /2
        finish("50"),
    ]
    value, correct, details = score(go(tmp_path, [video], steps, "c7"), task_for([video]))
    assert details["n_escape"] == 0.0 and details["escapes"] is None
    assert correct is True and value == pytest.approx(1.0)


def test_a_real_escape_still_zeroes_correctness(tmp_path: Path, video: Path) -> None:
    steps = [cmd(FRAME), cmd("python3 -c \"print(open('/etc/hostname').read())\""), finish("50")]
    value, correct, details = score(go(tmp_path, [video], steps, "esc"), task_for([video]))
    assert details["escapes"] == "/etc/hostname" and correct is False
    assert value == pytest.approx(0.2 - 0.5 * 1 / 4)


def test_case_8_audio_solved_through_the_shipped_skill_engages_audio(
    tmp_path: Path, audio_file: Path
) -> None:
    line = "python3 .skills/transcription/transcribe.py inputs/tones.wav > t.txt || true"
    model, _ = scripted([cmd(line), finish("50")])
    run = run_coder(
        tmp_path, model, [audio_file], "What is said in the audio?", name="c8", skills="starter"
    )
    assert (run.workspace / ".skills" / "transcription" / "transcribe.py").is_file()
    value, correct, details = score(run, task_for([audio_file]))
    assert details["r_mod"] == 0.0 and correct is True and value == pytest.approx(1.0)


def test_case_9_whisper_in_the_command_engages_audio(tmp_path: Path, audio_file: Path) -> None:
    steps = [cmd("whisper inputs/tones.wav --model tiny || echo 'no whisper here'"), finish("50")]
    value, correct, details = score(go(tmp_path, [audio_file], steps, "c9"), task_for([audio_file]))
    assert details["r_mod"] == 0.0 and correct is True and value == pytest.approx(1.0)


def test_an_audio_task_without_an_audio_tool_is_penalised(tmp_path: Path, audio_file: Path) -> None:
    steps = [cmd("ls -la inputs"), finish("50")]
    value, correct, _ = score(go(tmp_path, [audio_file], steps, "noaudio"), task_for([audio_file]))
    assert correct is False and value == pytest.approx(-0.1)


def test_case_10_an_untagged_final_after_reminders_is_minus_0_2(
    tmp_path: Path, video: Path
) -> None:
    steps = [cmd(FRAME), s.text("50"), s.text("50"), s.text("50")]
    run = go(tmp_path, [video], steps, "c10", max_reminders=2)
    value, correct, details = score(run, task_for([video]))
    # Appendix I.1: no <answer> wrapper, no answer; the exit (no tool call) is not a removal.
    assert run.saved.answer is None and run.exit_reason() == "no_tool_call"
    assert prediction_text(run.saved) == ""  # nothing untagged reaches the benchmark scorer
    assert details["removed"] == "no" and correct is False and value == pytest.approx(-0.2)


def test_case_11_a_call_with_empty_arguments_counts_as_a_call_not_as_bad(
    tmp_path: Path, video: Path
) -> None:
    steps = [cmd(FRAME), s.tool_call("execute_commands", {}), finish("50")]
    value, correct, details = score(go(tmp_path, [video], steps, "c11"), task_for([video]))
    # The authors' grader parses empty arguments as {}: a tool call, none of the four bad kinds.
    assert details["n_tool"] == 3.0 and details["p_bad"] == 0.0
    assert correct is True and value == pytest.approx(1.0)
