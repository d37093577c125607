"""The tir loop driven by scripted models: answers, tool calls, faults, forced final, budgets."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentkit import RunAgent, calls, scripted

from omnilab.agents import AgentContext, AgentTask, Budgets, get_agent
from omnilab.agents.templates import render
from omnilab.models.events import ModelCallEvent
from omnilab.models.model import Model
from omnilab.models.providers import scripted as s
from omnilab.models.types import ModelOutput, Usage
from omnilab.trajectory import (
    AnswerEvent,
    ErrorEvent,
    MessageAdded,
    RunEnd,
    RunStart,
    TrajectoryWriter,
    read_trajectory,
)

CODE = ["code_executor"]


def test_answers_at_once_without_tools(run_agent: RunAgent, image_file: Path) -> None:
    model, adapter = scripted([s.text("It shows blocks. <answer>blocks</answer>")])
    run = run_agent(model, [image_file])
    assert run.kinds == ["run_start", "message", "message", "model_call", "answer", "run_end"]
    assert run.saved.answer == run.returned.answer == "blocks"
    assert run.saved.status == "answered" and run.saved.tool_results == []
    assert [e.kind for e in run.live] == run.kinds  # the live hook saw every event, in order
    end = run.saved.run_end
    assert end is not None and end.turns == 1
    # The conversation rebuilt from the file is exactly what the model was sent, plus its reply.
    sent, _tools, _config = adapter.requests[0]
    assert run.saved.messages()[:2] == sent
    assert run.saved.messages()[-1].text.endswith("<answer>blocks</answer>")


def test_tool_call_then_answer_records_each_step(run_agent: RunAgent) -> None:
    model, adapter = scripted(
        [
            s.tool_call("code_executor", {"code": "x = 6 * 7\nprint(x)"}),
            s.text("<answer>42</answer>"),
        ]
    )
    run = run_agent(model, question="What is 6 times 7?", tools=CODE)
    (result,) = run.saved.tool_results
    assert result.name == "code_executor" and result.result.error is None
    assert '"stdout": "42"' in result.result.text
    assert run.saved.answer == "42"
    # The second request carried the tool result back, under the call's id.
    second, specs, _ = adapter.requests[1]
    assert [t.name for t in specs] == CODE
    assert second[-1].role == "tool" and second[-1].tool_call_id == result.call_id
    rebuilt = run.saved.messages()
    last = run.saved.model_calls[-1].output
    assert rebuilt[:-1] == second and last is not None and rebuilt[-1] == last.message


def test_every_parallel_call_runs_and_gets_a_result(run_agent: RunAgent) -> None:
    model, adapter = scripted(
        [
            calls(
                ("code_executor", {"code": "print('a')"}),
                ("no_such_tool", {"q": 1}),
                ("code_executor", {"code": "print('b')"}),
                bad="code_executor",
            ),
            s.text("<answer>done</answer>"),
        ]
    )
    run = run_agent(model, tools=CODE)
    results = run.saved.tool_results
    assert [r.name for r in results] == [
        "code_executor",
        "no_such_tool",
        "code_executor",
        "code_executor",
    ]
    assert '"stdout": "a"' in results[0].result.text and '"stdout": "b"' in results[2].result.text
    assert results[1].result.error is not None and results[1].result.error.code == "UNKNOWN_TOOL"
    assert "code_executor" in results[1].result.error.message  # it says what exists
    assert results[3].result.error is not None and results[3].result.error.code == "INVALID_ARGS"
    sent, _, _ = adapter.requests[1]
    call_ids = [c.id for c in run.saved.tool_calls]
    assert [m.tool_call_id for m in sent if m.role == "tool"] == call_ids
    assert run.saved.status == "answered"


def test_a_model_that_never_answers_gets_the_forced_final(run_agent: RunAgent) -> None:
    loop = [s.tool_call("code_executor", {"code": f"print({i})"}) for i in range(3)]
    model, adapter = scripted([*loop, s.text("Out of time. <answer>best guess</answer>")])
    run = run_agent(model, tools=CODE, budgets=Budgets(max_turns=3), variant="omniatlas")
    assert len(run.saved.tool_results) == 3
    final = run.saved.final
    assert final is not None and final.forced and final.answer == "best guess"
    assert run.saved.status == "answered"
    last_sent, specs, config = adapter.requests[-1]
    assert config.tool_choice == "none" and [t.name for t in specs] == CODE
    assert last_sent[-1].text == (
        "You have exceeded the maximum number of turns (3). You are not allowed to call tools "
        "anymore. Please provide your final answer to the user's question now based on the "
        "information you have."
    )
    assert isinstance(run.saved.events[-3], ModelCallEvent)
    end = run.saved.run_end
    assert end is not None and end.turns == 4


def test_forced_final_without_an_answer_ends_as_budget(run_agent: RunAgent) -> None:
    model, adapter = scripted([s.tool_call("code_executor", {"code": "1"}), s.empty()])
    run = run_agent(model, tools=CODE, budgets=Budgets(max_turns=1), variant="base")
    assert adapter.requests[-1][0][-1].text == render("forced_final_base")
    final = run.saved.final
    assert final is not None and final.forced and final.answer is None
    assert run.saved.status == "budget"


def test_plain_final_message_is_taken_whole_as_a_fallback(run_agent: RunAgent) -> None:
    model, _ = scripted([s.text("  The text says hello.  ")])
    run = run_agent(model)
    final = run.saved.final
    assert final is not None and not final.forced
    # No <answer> tag: the whole message is the answer, and answer == stripped text marks it.
    assert final.answer == "The text says hello." == final.text.strip()
    assert run.saved.status == "answered"


def test_malformed_calls_get_a_notice_and_the_model_recovers(run_agent: RunAgent) -> None:
    model, adapter = scripted(
        [
            s.malformed_tool_call("code_executor", {"code": "print(1)"}, style="broken"),
            s.malformed_tool_call("code_executor", {"code": "print(2)"}, style="truncated"),
            s.text("<answer>2</answer>"),
        ]
    )
    run = run_agent(model, tools=CODE)
    notice = adapter.requests[1][0][-1]
    assert notice.role == "user" and notice.text == render("notice_bad_call", tools="code_executor")
    added = [e for e in run.saved.events if isinstance(e, MessageAdded)]
    assert added[-1].message == notice  # the notice is on record
    (recovered,) = run.saved.tool_results  # the cut-off call was repaired and run
    assert '"stdout": "2"' in recovered.result.text
    assert run.saved.answer == "2"


def test_an_empty_reply_gets_a_notice(run_agent: RunAgent) -> None:
    model, adapter = scripted([s.empty(), s.text("<answer>ok</answer>")])
    run = run_agent(model)
    assert adapter.requests[1][0][-1].text == render("notice_empty")
    assert run.saved.answer == "ok"


def test_a_failing_model_ends_the_run_with_an_error(run_agent: RunAgent) -> None:
    model, _ = scripted([s.error(400, message="bad request body")])
    run = run_agent(model)
    errors = [e for e in run.saved.events if isinstance(e, ErrorEvent)]
    assert [e.error_kind for e in errors] == ["model"]
    assert "bad request body" in errors[0].message
    assert run.saved.status == "error" and run.saved.answer is None
    assert run.kinds[-1] == "run_end"


def test_token_budget_stops_the_run(run_agent: RunAgent) -> None:
    spent = Usage(prompt_tokens=90, completion_tokens=20)
    model, adapter = scripted(
        [
            s.tool_call("code_executor", {"code": "1"}, usage=spent),
            s.tool_call("code_executor", {"code": "2"}, usage=spent),
        ]
    )
    run = run_agent(model, tools=CODE, budgets=Budgets(max_tokens=100))
    assert len(adapter.requests) == 1 and run.saved.status == "budget"
    end = run.saved.run_end
    assert end is not None and end.usage.total_tokens == 110
    assert any(isinstance(e, ErrorEvent) and e.error_kind == "budget" for e in run.saved.events)


def test_time_budget_cancels_a_hanging_call(run_agent: RunAgent) -> None:
    model, _ = scripted([s.timeout(seconds=30)])
    run = run_agent(model, budgets=Budgets(max_seconds=0.5))
    end = run.saved.run_end
    assert end is not None and end.status == "budget" and end.wall_s < 5


def test_cancelled_run_still_ends_its_trajectory(tmp_path: Path) -> None:
    model, _ = scripted([s.timeout(seconds=30)])
    path = tmp_path / "t.jsonl"

    async def main() -> None:
        with TrajectoryWriter(path) as writer:
            ctx = AgentContext(
                model=model,
                roles={},
                tools=[],
                budgets=Budgets(),
                workspace=tmp_path / "ws",
                trajectory=writer,
            )
            task = asyncio.ensure_future(get_agent("tir").run(AgentTask(id="c", question="q"), ctx))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    saved = read_trajectory(path)
    assert saved.status == "error"
    assert any(isinstance(e, ErrorEvent) and e.error_kind == "cancelled" for e in saved.events)
    # issue 44.22: a sentence, not the exception's repr
    (stopped,) = [e for e in saved.events if isinstance(e, ErrorEvent)]
    assert stopped.message == "the run was stopped before it finished"


def test_concurrent_runs_on_one_model_keep_their_own_events(tmp_path: Path) -> None:
    model, _ = scripted([s.text(f"<answer>{i}</answer>") for i in range(4)])
    seen: list[ModelCallEvent] = []
    model.sink = seen.append  # the caller's own sink keeps getting every call

    async def one(i: int) -> None:
        with TrajectoryWriter(tmp_path / f"{i}.jsonl") as writer:
            ctx = AgentContext(
                model=model,
                roles={},
                tools=[],
                budgets=Budgets(),
                workspace=tmp_path / f"ws{i}",
                trajectory=writer,
            )
            await get_agent("tir").run(AgentTask(id=str(i), question="q"), ctx)

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(4)))

    asyncio.run(main())
    answers = set()
    for i in range(4):
        saved = read_trajectory(tmp_path / f"{i}.jsonl")
        assert len(saved.model_calls) == 1 and saved.status == "answered"
        answers.add(saved.answer)
    assert answers == {"0", "1", "2", "3"} and len(seen) == 4


def test_run_start_names_the_setup(run_agent: RunAgent, video: Path) -> None:
    model, _ = scripted([s.text("<answer>x</answer>")])
    run = run_agent(model, [video], tools=CODE, budgets=Budgets(max_turns=7), mode="native")
    start = run.saved.events[0]
    assert isinstance(start, RunStart)
    assert start.agent == "tir" and start.task_id is not None
    assert start.models == {"agent": "scripted:agent"}
    assert start.config["mode"] == "native" and start.config["variant"] == "base"
    assert start.config["tools"] == CODE and start.config["budgets"]["max_turns"] == 7
    assert [f.id for f in start.inputs] == ["video_1"]
    assert isinstance(run.saved.events[-1], RunEnd)
    assert isinstance(run.saved.events[-2], AnswerEvent)


def test_trajectory_is_on_disk_before_the_run_ends(tmp_path: Path) -> None:
    """Every event is written as it happens: the file holds the tool result while the model is
    still thinking about the next step."""
    path = tmp_path / "t.jsonl"
    snapshot: list[str] = []

    class Peeking(s.ScriptedAdapter):
        async def generate(self, *args: Any, **kwargs: Any) -> ModelOutput:
            snapshot.append(path.read_text())
            return await super().generate(*args, **kwargs)

    adapter = Peeking(
        [s.tool_call("code_executor", {"code": "print('seen')"}), s.text("<answer>y</answer>")]
    )
    model = Model(adapter, name="scripted:peek")
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model,
            roles={},
            tools=CODE,
            budgets=Budgets(),
            workspace=tmp_path / "ws",
            trajectory=writer,
        )
        asyncio.run(get_agent("tir").run(AgentTask(id="d", question="q"), ctx))
    assert '"kind":"run_start"' in snapshot[0] and '"kind":"tool_result"' not in snapshot[0]
    assert '"kind":"tool_result"' in snapshot[1] and "seen" in snapshot[1]
    assert '"kind":"run_end"' not in snapshot[1]


def test_answer_source_is_recorded(run_agent: RunAgent, image_file: Path) -> None:
    """A plain final message is taken whole, and the trajectory says so (scorers can tell)."""
    model, _ = scripted([s.text("The blocks are white.")])
    run = run_agent(model, [image_file])
    final = run.saved.final
    assert final is not None
    assert (final.answer, final.source) == ("The blocks are white.", "whole_text")
    model, _ = scripted([s.text("<answer>white</answer>")])
    final = run_agent(model, [image_file]).saved.final
    assert final is not None and final.source == "tag"


@pytest.mark.parametrize(
    "reply",
    [
        s.text('<tool_call>{"name": "code_executor", "arguments": {"code": "1"}}</tool_call>'),
        s.text('{"name": "code_executor", "arguments": {"code": "1"}}'),
        s.text('```json\n{"name": "code_executor", "code": "print(1)"}\n```'),
        s.tool_call("code_executor", {"code": "1"}),  # a native call despite tool_choice none
    ],
)
def test_a_forced_final_that_is_a_tool_call_is_no_answer(
    run_agent: RunAgent, reply: s.OutputStep
) -> None:
    model, adapter = scripted([s.tool_call("code_executor", {"code": "1"}), reply])
    run = run_agent(model, tools=CODE, budgets=Budgets(max_turns=1))
    assert adapter.requests[-1][2].tool_choice == "none"
    final = run.saved.final
    assert final is not None and final.forced and final.answer is None
    assert final.text == reply.output.text
    assert run.saved.status == run.returned.status == "no_answer"


def test_the_authors_loop_rules_as_options(run_agent: RunAgent) -> None:
    # on_empty="end": an empty reply ends the run, no notice.
    model, adapter = scripted([s.empty(), s.text("<answer>late</answer>")])
    run = run_agent(model, on_empty="end")
    assert len(adapter.requests) == 1 and run.saved.status == "no_answer"
    # on_bad_call="answer": an unreadable call's text is the final answer.
    bad = s.malformed_tool_call("code_executor", {"code": "print(1)"}, style="broken")
    model, adapter = scripted([bad, s.text("<answer>never</answer>")])
    run = run_agent(model, tools=CODE, on_bad_call="answer")
    final = run.saved.final
    assert len(adapter.requests) == 1 and final is not None and final.answer
    assert run.saved.status == "answered" and final.answer == final.text.strip()
    start = run.saved.run_start
    assert start is not None and start.config["on_bad_call"] == "answer"


def test_the_forced_final_call_can_sample_differently(run_agent: RunAgent) -> None:
    model, adapter = scripted(
        [s.tool_call("code_executor", {"code": "1"}), s.text("<answer>x</answer>")]
    )
    run = run_agent(
        model,
        tools=CODE,
        budgets=Budgets(max_turns=1),
        generate={"temperature": 0.6, "top_p": 0.95, "max_tokens": 20480},
        forced_final_generate={"temperature": 0.2, "top_p": 0.9, "max_tokens": 4096},
    )
    first, last = adapter.requests[0][2], adapter.requests[-1][2]
    assert (first.temperature, first.top_p, first.max_tokens) == (0.6, 0.95, 20480)
    assert (last.temperature, last.top_p, last.max_tokens) == (0.2, 0.9, 4096)
    assert last.tool_choice == "none" and run.saved.answer == "x"
