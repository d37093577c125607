"""The ``code-x-omnigaia`` preset: the released KIRA harness's settings on the wire (thinking on,
a 30,000-byte output cap, commands cut at 1 s by default) and OmniGAIA's reference judge rules in
the run config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from omnilab.agents import get_agent
from omnilab.bench.protocols import get_protocol
from omnilab.bench.run_dir import RunDir
from omnilab.bench.scoring.judging import REFERENCE_RULES
from omnilab.cli.main import app
from omnilab.media import synth
from omnilab.models.fake_server import FakeOpenAIServer, reply_text, reply_tool_calls

runner = CliRunner()


def _command(keystrokes: str) -> Any:
    return reply_tool_calls(
        ("execute_commands", {"analysis": "a", "plan": "p", "keystrokes": keystrokes})
    )


def _eval(folder: Path, *extra: str) -> tuple[list[dict[str, Any]], Path]:
    """One OmniGAIA item: a command printing 50,000 bytes, one sleeping 3 s, then the answer."""
    image = folder / "media" / "pic.png"
    image.parent.mkdir(parents=True)
    synth.make_image(image, text="hi", size=(64, 48))
    item = {"id": 1, "question": "What is written?", "answer": "hi", "Level": "Easy",
            "omni_modal_input": [{"type": "image", "path": "pic.png"}]}  # fmt: skip
    data = folder / "omnigaia.json"
    data.write_text(json.dumps([item]), encoding="utf-8")
    out = folder / "run"
    with (
        FakeOpenAIServer(default=reply_text("Correct")) as judge,
        FakeOpenAIServer() as agent,
    ):
        agent.push(
            _command("head -c 50000 /dev/zero | tr '\\0' x"),
            _command("sleep 3 && echo woke"),
            # KIRA's task_complete takes no arguments (the preset's tool_schema): the wrapped
            # answer is in the text of the same reply, which both schemas read.
            reply_tool_calls(("task_complete", {}), text="<answer>hi</answer>"),
        )
        done = runner.invoke(
            app,
            [
                "eval", "omnigaia", "--data", str(data), "--media-root", str(folder / "media"),
                "--agent", "coder", "--model", f"vllm:coder@{agent.base_url}",
                "--judge", f"vllm:judge@{judge.base_url}", "--out", str(out), "--no-cache",
                "--no-progress", *extra,
            ],
        )  # fmt: skip
        assert done.exit_code == 0, (done.output, done.exception)
        bodies = [agent.body(i) for i in range(len(agent.chat_requests))]
    return bodies, out


def _tool_text(body: dict[str, Any]) -> str:
    message = body["messages"][-1]
    assert message["role"] == "tool"
    content = message["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def test_the_preset_loads_and_its_options_reach_the_agent() -> None:
    preset = get_protocol("code-x-omnigaia")
    assert "Dongping-Chen/OmniCoding" in preset.source and preset.agent == "coder" and preset.gaps
    options = get_agent("coder", **preset.agent_options).options  # type: ignore[attr-defined]
    assert (options.network, options.max_reminders, options.output_bytes) == (True, 10, 30000)
    assert (options.command_timeout, options.max_command_timeout) == (1.0, 60.0)
    assert options.merge_output is True and options.repeat_notice is False
    assert options.summarize_on_overflow is True and options.tool_schema == "kira"
    assert preset.budgets.max_turns == 120 and preset.scoring_rules == REFERENCE_RULES


def test_the_code_x_presets_gaps_are_named_or_listed_as_open() -> None:
    preset = get_protocol("code-x-omnigaia")
    assert preset.open_gaps == []
    # reproduced: the output cap (merge_output), the recovery of malformed Qwen3.6 calls and
    # the summary on context overflow (summarize_on_overflow)
    reproduced = {
        "output cap",
        "malformed tool calls",
        "context overflow",
        "prompts and tool schemas",
    }
    assert not reproduced & {g.finding for g in preset.gaps}
    assert all(g.reason for g in preset.named_gaps) and len(preset.named_gaps) == 6
    assert get_protocol("agent-omni-code-x").open_gaps == []
    shown = CliRunner().invoke(app, ["protocols", "code-x-omnigaia"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0
    assert "differs, with a reason web search" in shown.output
    assert "cannot run offline" in shown.output
    assert "not reproduced yet" not in shown.output
    assert "differs, with a reason OmniGAIA prompt" in shown.output


def test_thinking_output_cap_and_command_timeout_on_the_wire(tmp_path: Path) -> None:
    bodies, out = _eval(tmp_path / "preset", "--protocol", "code-x-omnigaia")
    assert len(bodies) == 3
    assert bodies[0]["chat_template_kwargs"] == {"enable_thinking": True}
    long = _tool_text(bodies[1])
    assert 30000 <= long.count("x") < 31000  # head and tail of the 50,000 bytes
    slept = _tool_text(bodies[2])
    assert "ran past its time limit" in slept and "woke" not in slept
    config = RunDir(out).read_config()
    assert config.scoring_rules == REFERENCE_RULES and config.budgets.max_turns == 120
    (row,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert row["score"]["correct"] is True
    # omnilab's defaults: 16,000 bytes kept, 120 s per command, no thinking switch
    bodies, out = _eval(tmp_path / "default")
    assert "chat_template_kwargs" not in bodies[0]
    assert 16000 <= _tool_text(bodies[1]).count("x") < 17000
    assert "woke" in _tool_text(bodies[2])
    assert RunDir(out).read_config().scoring_rules is None
