"""The coder agent through the command line: ask shows its steps, eval resumes, score lists
each task's Code-X reward."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from coderkit import sandbox_level  # noqa: F401 (autouse)
from typer.testing import CliRunner

from omnilab.cli.main import app

pytestmark = pytest.mark.slow

runner = CliRunner()


def _call(name: str, arguments: dict[str, object], text: str = "") -> dict[str, object]:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "tool_calls": [{"name": name, "arguments": arguments}],
    }
    return {"kind": "output", "output": {"message": message, "finish_reason": "tool_calls"}}


def _script(path: Path, answer: str) -> Path:
    frame = "mkdir -p f && ffmpeg -loglevel error -ss 2 -i inputs/video.mp4 -frames:v 1 f/a.png"
    steps = [
        _call("execute_commands", {"analysis": "start", "plan": "a frame", "keystrokes": frame}),
        _call("image_read", {"path": "f/a.png"}),
        _call("task_complete", {}, text=f"<answer>{answer}</answer>"),
    ]
    path.write_text(json.dumps(steps))
    return path


def invoke(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


def test_ask_shows_commands_images_and_answer(tmp_path: Path, video: Path) -> None:
    script = _script(tmp_path / "s.json", "frame fifty")
    out = invoke(
        "ask",
        video,
        "Which frame?",
        "--agent",
        "coder",
        "--model",
        f"scripted:{script}",
        "--out",
        tmp_path / "run",
    )
    assert "agent coder" in out
    assert "execute_commands(" in out and "ffmpeg -loglevel error" in out
    assert 'image_read(path="f/a.png")' in out and "Loaded f/a.png" in out
    assert "frame fifty" in out and "exit: completion" in out
    assert (tmp_path / "run" / "trajectory.coder" / "rollout.json").is_file()


def test_eval_resumes_and_score_prints_rewards(tmp_path: Path, video: Path) -> None:
    data = tmp_path / "tasks.jsonl"
    rows = [{"id": "right", "question": "Which frame?", "video": str(video), "answers": ["50"]}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = _script(tmp_path / "s.json", "50")
    args = (
        "eval",
        "jsonl",
        "--data",
        data,
        "--agent",
        "coder",
        "--model",
        f"scripted:{script}",
        "--out",
        tmp_path / "ev",
        "--media-root",
        video.parent,  # the session's video, named by its absolute path
    )
    invoke(*args)
    assert "1 were done before" in invoke(
        *args, "--resume"
    )  # the rerun resumes: nothing runs again
    out = invoke("score", tmp_path / "ev", "--scorer", "code-x-reward", "--tasks")
    rows_out = [line.split()[:4] for line in out.splitlines()]
    assert "scores by task" in out and ["right", "1.000", "yes", "completion"] in rows_out
    # Scores that are not just 0 and 1 are listed by task without asking.
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(data.read_text().replace('["50"]', '["49"]'))
    out = invoke("score", tmp_path / "ev", "--scorer", "code-x-reward", "--data", wrong)
    assert ["right", "0.200", "no", "completion"] in [line.split()[:4] for line in out.splitlines()]


def test_doctor_lists_the_sandbox_toolbox() -> None:
    report = json.loads(invoke("doctor", "--json"))
    toolbox = report["toolbox"]
    assert set(toolbox) == {"ffmpeg", "mediaprobe", "python", "numpy", "PIL", "av", "omnilab"}
    # imageio-ffmpeg is a dev dependency: its ffmpeg runs inside the sandbox.
    assert toolbox["ffmpeg"] and toolbox["av"] and toolbox["numpy"] and toolbox["PIL"]
    # omnilab's own CLI too, editable install included (its package folder is bound back).
    assert toolbox["omnilab"]
    text = invoke("doctor")
    assert (
        "media toolbox in the sandbox (coder agent):" in text
        and f"ffmpeg: {toolbox['ffmpeg']}" in text
    )


def test_a_missing_ffmpeg_is_said_in_the_prompt_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnilab.agents.coder import toolbox

    if shutil.which("ffmpeg"):
        pytest.skip("this machine has a system ffmpeg on PATH")
    monkeypatch.setattr(toolbox, "ffmpeg_exe", lambda: None)
    toolbox.toolbox_report.cache_clear()
    try:
        report = toolbox.toolbox_report()
    finally:
        toolbox.toolbox_report.cache_clear()
    assert report.as_dict()["ffmpeg"] is None and report.as_dict()["av"]
    assert "not available here: ffmpeg" in report.prompt_lines()
    assert "- av " in report.prompt_lines()


def test_eval_omnigaia_item_runs_with_omnilab_inside_the_sandbox(tmp_path: Path) -> None:
    # A real OmniGAIA item (tests/data/omnigaia_sample.json, id 37: one video with audio) with
    # its media made on the spot under the item's own relative path, as the release lays it out.
    from omnilab.media.synth import make_video

    sample = Path(__file__).parents[1] / "data" / "omnigaia_sample.json"
    [item] = [x for x in json.loads(sample.read_text(encoding="utf-8")) if x["id"] == 37]
    [media] = item["omni_modal_input"]
    (tmp_path / media["path"]).parent.mkdir(parents=True)
    make_video(tmp_path / media["path"], duration=3.0)
    data = tmp_path / "omnigaia.json"
    data.write_text(json.dumps([item]), encoding="utf-8")
    staged = "inputs/" + Path(media["path"]).name
    probe = f"omnilab media probe {staged} > probe.txt && grep -ci h264 probe.txt"
    steps = [
        _call("execute_commands", {"analysis": "a", "plan": "probe", "keystrokes": probe}),
        _call("task_complete", {}, text=f"<answer>{item['answer']}</answer>"),
    ]
    script = tmp_path / "s.json"
    script.write_text(json.dumps(steps))
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"outputs": ["Correct"], "repeat": True}))
    args = ("eval", "omnigaia", "--data", data, "--agent", "coder", "--model",
            f"scripted:{script}", "--judge", f"scripted:{judge}", "--out", tmp_path / "ev",
            "--no-progress")  # fmt: skip
    invoke(*args)
    [result] = [json.loads(x) for x in (tmp_path / "ev" / "results.jsonl").read_text().splitlines()]
    assert result["error"] is None and result["em"] is True and result["judged"] is True
    from omnilab.trajectory import read_trajectory

    traj = read_trajectory(tmp_path / "ev" / "trajectories" / "37.jsonl")
    [shell] = [r for r in traj.tool_results if r.name == "execute_commands"]
    output = "".join(getattr(c, "text", "") for c in shell.result.content)
    # omnilab itself ran inside the sandbox (an editable install's package is bound back).
    assert "command not found" not in output and "No module named" not in output
    assert int(output.split()[0]) >= 1 and "[exit code 0," in output, output
    first = traj.contexts()[0].messages
    prompt = "".join(getattr(c, "text", "") for m in first for c in m.content)
    assert staged in prompt and str(tmp_path) not in prompt  # workspace paths, no host paths
    assert "1 were done before" in invoke(*args, "--resume")
