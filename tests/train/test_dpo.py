"""OmniDPO pairs from a scripted failure and a scripted fix: the judge finds the first wrong step,
the re-run replays the steps before it and corrects it with hindsight guidance, and the pair's
prompt is exactly that step's context, chosen the fix, rejected the original step."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from explore_kit import answer, call, dataset, register, scripted
from typer.testing import CliRunner

from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import Components, evaluate, new_config
from omnilab.cli.main import app
from omnilab.models.providers.scripted import OutputStep, error
from omnilab.models.types import ModelOutput
from omnilab.tools.base import Tool
from omnilab.train.dpo import dpo_pairs
from omnilab.train.dpo_rows import trl_message
from omnilab.train.explore_replay import agent_calls
from omnilab.train.explore_verify import read_json_object
from omnilab.train.files import format_problems
from omnilab.trajectory import read_trajectory


@pytest.fixture()
def test_tool() -> Iterator[Tool]:
    yield from register()


def _judgment(step: int | None, correction: str = "Look up a, not b.") -> OutputStep:
    reply = {
        "first_error_step": step,
        "category": "Ineffective Tool Call",
        "explanation": "b is irrelevant",
        "correction": correction,
    }
    return OutputStep(output=ModelOutput.from_text(json.dumps(reply)))


def _failed_run(tmp_path: Path) -> Path:
    """A tir run that looks up the wrong key, answers 9 and is scored wrong."""
    agent, _ = scripted([call("b"), answer("9")], "agent")
    config = new_config(
        "jsonl", dataset(tmp_path), agent="tir", model="scripted:agent", tools=["explore_lookup"]
    )
    run = tmp_path / "run"
    asyncio.run(evaluate(config, run, components=Components(model=agent)))
    assert RunDir(run).results()[0].judged is False
    return run


def test_pair_from_a_scripted_failure_and_a_scripted_fix(tmp_path: Path, test_tool: Tool) -> None:
    run = _failed_run(tmp_path)
    judge, judge_adapter = scripted([_judgment(1)], "judge")
    fixer, fixer_adapter = scripted([call("a", "I should look up a."), answer("42")], "fixer")
    export = asyncio.run(dpo_pairs([run], judge=judge, model=fixer, reruns=tmp_path / "reruns"))
    # The judge saw the answer and the numbered steps with their observations.
    judge_prompt = judge_adapter.requests[0][0][0].text
    assert "Correct Answer: 42" in judge_prompt and "Step 1:" in judge_prompt
    assert "b is 7" in judge_prompt and "Step 2:" in judge_prompt
    # The fix was made with the correction shown for that call only.
    first_sent = fixer_adapter.requests[0][0]
    assert "Look up a, not b." in first_sent[-1].text
    assert all("Look up a, not b." not in m.text for m in fixer_adapter.requests[1][0])
    assert len(export.rows) == 1
    log = export.log[0]
    assert log.pair and log.rerun_correct is True and log.judgment is not None
    assert log.judge_reply and json.loads(log.judge_reply)["first_error_step"] == 1
    # prompt = exactly the context of the wrong step; chosen = the fix; rejected = the original.
    original = agent_calls(read_trajectory(RunDir(run).trajectory_file("t1", 0)))[0]
    assert original.sent is not None
    row = export.rows[0]
    assert row["prompt"] == [trl_message(m, []) for m in original.sent.messages]
    assert all("Look up a, not b." not in json.dumps(m) for m in row["prompt"])
    assert row["chosen"] == [
        {
            "role": "assistant",
            "content": "I should look up a.",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "explore_lookup", "arguments": {"key": "a"}},
                }
            ],
        }
    ]
    assert row["rejected"][0]["tool_calls"][0]["function"]["arguments"] == {"key": "b"}
    assert [t["function"]["name"] for t in row["tools"]] == ["explore_lookup"]
    # The judge's reply was constrained to every field, the category one of the paper's six.
    schema = judge_adapter.requests[0][2].response_format
    assert schema is not None and "Ineffective Tool Call" in json.dumps(schema.json_schema)
    step_schema = schema.json_schema["properties"]["first_error_step"]["anyOf"][0]
    assert (step_schema["minimum"], step_schema["maximum"]) == (1, 2)  # the run had 2 steps
    assert set(schema.json_schema["required"]) == {
        "first_error_step",
        "category",
        "explanation",
        "correction",
    }
    # The re-run is a branch of the failed run, diverging right at its start.
    rerun = read_trajectory(Path(log.rerun or ""))
    failed = read_trajectory(RunDir(run).trajectory_file("t1", 0))
    assert rerun.run_start is not None and failed.run_start is not None
    assert rerun.run_start.parent_run_id == failed.run_start.run_id
    assert rerun.run_start.parent_event_id == failed.run_start.id
    assert rerun.answer == "42"


def test_a_later_error_replays_the_steps_before_it(tmp_path: Path, test_tool: Tool) -> None:
    run = _failed_run(tmp_path)
    judge, _ = scripted([_judgment(2, "b is 7, so compute 40 + 2 from a instead.")], "judge")
    fixer, fixer_adapter = scripted([answer("42")], "fixer")
    export = asyncio.run(dpo_pairs([run], judge=judge, model=fixer, reruns=tmp_path / "r"))
    assert len(fixer_adapter.requests) == 1  # step 1 was replayed, not asked again
    row = export.rows[0]
    original = agent_calls(read_trajectory(RunDir(run).trajectory_file("t1", 0)))[1]
    assert original.sent is not None
    assert row["prompt"] == [trl_message(m, []) for m in original.sent.messages]
    assert row["prompt"][-1]["role"] == "tool" and row["prompt"][-1]["content"] == "b is 7"
    assert row["chosen"][0]["content"] == "So it is <answer>42</answer>"
    assert row["rejected"][0]["content"] == "So it is <answer>9</answer>"
    rerun = read_trajectory(Path(export.log[0].rerun or ""))
    assert (
        rerun.run_start is not None
        and rerun.run_start.parent_event_id
        == agent_calls(read_trajectory(RunDir(run).trajectory_file("t1", 0)))[0].id
    )


def test_no_pair_when_the_fix_fails_or_the_judge_finds_nothing(
    tmp_path: Path, test_tool: Tool
) -> None:
    run = _failed_run(tmp_path)
    judge, _ = scripted([_judgment(1)], "judge")
    fixer, _ = scripted([call("a"), answer("41")], "fixer")
    export = asyncio.run(dpo_pairs([run], judge=judge, model=fixer, reruns=tmp_path / "r1"))
    assert export.rows == []
    assert export.log[0].reason == "the corrected re-run did not succeed"
    judge, _ = scripted([_judgment(None)], "judge")
    export = asyncio.run(dpo_pairs([run], judge=judge, model=fixer, reruns=tmp_path / "r2"))
    assert export.rows == [] and "no erroneous step" in export.log[0].reason
    judge, _ = scripted([error(500)], "judge")
    export = asyncio.run(dpo_pairs([run], judge=judge, model=fixer, reruns=tmp_path / "r3"))
    assert export.log[0].reason.startswith("the judge failed")


def test_reads_the_json_of_a_judge_reply() -> None:
    assert read_json_object('Sure.\n```json\n{"a": 1}\n```') == {"a": 1}
    assert read_json_object('x {"a": {"b": 2}} y') == {"a": {"b": 2}}
    assert read_json_object("step 1") is None and read_json_object("[1, 2]") is None


def test_export_dpo_command_writes_pairs_and_the_judge_log(tmp_path: Path, test_tool: Tool) -> None:
    run = _failed_run(tmp_path)
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps([_judgment(1).output.text]))
    fixer = tmp_path / "fix.json"
    fix_call = {"tool_call": {"name": "explore_lookup", "arguments": {"key": "a"}}}
    fixer.write_text(json.dumps([fix_call, "So it is <answer>42</answer>"]))
    out = tmp_path / "pairs.jsonl"
    args = ["export", "dpo", run, "--judge", f"scripted:{judge}", "--model", f"scripted:{fixer}"]
    result = CliRunner().invoke(app, [str(a) for a in [*args, "--out", out, "--check"]])
    assert result.exit_code == 0, result.output
    assert "check: trl-dpo rules: every row passes" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1 and set(rows[0]) == {"prompt", "chosen", "rejected", "tools"}
    log = [json.loads(line) for line in (tmp_path / "pairs.judge.jsonl").read_text().splitlines()]
    assert log[0]["pair"] is True and "first_error_step" in log[0]["judge_reply"]
    assert (tmp_path / "pairs.jsonl.reruns" / "run" / "t1.jsonl").is_file()
    missing = CliRunner().invoke(
        app,
        [
            "export",
            "dpo",
            str(tmp_path / "nope"),
            "--judge",
            f"scripted:{judge}",
            "--out",
            str(out),
        ],
    )
    assert missing.exit_code != 0 and "not a run folder" in str(missing.exception)
    assert len(out.read_text().splitlines()) == 1  # the earlier export was left as it was


def test_a_run_whose_dataset_moved_is_logged_not_judged(tmp_path: Path, test_tool: Tool) -> None:
    run = _failed_run(tmp_path)
    (tmp_path / "data.jsonl").rename(tmp_path / "moved.jsonl")
    judge, judge_adapter = scripted([], "judge")
    export = asyncio.run(dpo_pairs([run], judge=judge, reruns=tmp_path / "r"))
    assert judge_adapter.requests == [] and export.rows == []
    assert export.log[0].reason == "the run's dataset file is gone or no longer lists the task"


def test_dpo_rows_break_no_trl_preference_rule() -> None:
    good = {
        "prompt": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "?"}]}],
        "chosen": [{"role": "assistant", "content": "a"}],
        "rejected": [{"role": "assistant", "content": "b"}],
        "images": ["x.png"],
    }
    assert format_problems([good], "trl-dpo") == []
    bad = {**good, "chosen": [], "images": []}
    assert format_problems([bad], "trl-dpo") == [
        "row 1: chosen is not one assistant message; image parts and images entries differ in number"
    ]


def test_a_failing_judge_is_said_once_and_an_empty_export_fails(
    tmp_path: Path, test_tool: Tool
) -> None:
    """Issue 44.4: the judge's failure is on the console (once), an export that wrote nothing
    because of it exits 4, and ``--check`` on the empty file says "0 rows"."""
    run = _failed_run(tmp_path)
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"outputs": [{"error": 500}], "repeat": True}))
    out = tmp_path / "pairs.jsonl"
    args = ["export", "dpo", str(run), "--judge", f"scripted:{judge}", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--check"], env={"OMNILAB_MODELS__BACKOFF_S": "0"})
    assert result.exit_code == 4, (result.output, result.exception)
    assert result.output.count("the judge failed on 1 of 1 rollouts") == 1
    assert "500" in result.output and out.read_text() == ""
    assert "check: 0 rows" in result.output
