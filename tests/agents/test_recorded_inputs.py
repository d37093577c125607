"""Against a local recording OpenAI-compatible server, a run with several contexts, parallel
tool calls, a tool's own model call, a result sent as a user message and a purge: every request
body the server logged equals the body built from the trajectory's rebuilt input, for the file
read back from disk and for the trajectory the run returned."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from omnilab.agents import AgentContext, AgentTask, Budgets
from omnilab.agents.session import AgentRun
from omnilab.content import Image
from omnilab.inputs import InputSet
from omnilab.models import Message
from omnilab.models.fake_server import FakeOpenAIServer, reply_text, reply_tool_calls
from omnilab.models.model import Model
from omnilab.models.registry import get_model
from omnilab.tools import Tool, tool
from omnilab.trajectory import RunStatus, Trajectory, TrajectoryWriter, read_trajectory

_DATA_URL = re.compile(r"data:[\w/.+-]+;base64,[A-Za-z0-9+/=]+")


def media_neutral(body: Any) -> Any:
    """``body`` with each inline media payload replaced by a hash of it (the encoding of media
    is the adapter's business; which file went where is what must match)."""
    text = json.dumps(body, sort_keys=True)
    return json.loads(
        _DATA_URL.sub(lambda m: "media:" + hashlib.sha256(m.group(0).encode()).hexdigest(), text)
    )


def make_tools(run: AgentRun, image: Path) -> list[Tool]:
    @tool
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return {"a": "alpha", "b": "beta"}.get(key, "unknown")

    @tool
    async def describe(image_id: str) -> str:
        """Describe an image with the perception model.

        Args:
            image_id: The image's id.
        """
        eye = run.models["perception"]
        reply = await eye.generate(
            [Message.system("Describe images."), Message.user(f"{image_id}:", Image(path=image))]
        )
        return reply.text

    return [lookup, describe]


async def scaffold(run: AgentRun, image: Path) -> RunStatus:
    tools = make_tools(run, image)
    chat = run.context("agent")
    run.add(chat, Message.system("You answer with tools."))
    run.add(chat, Message.user("Files: image_1", Image(path=image), "What is a, and the image?"))
    first = await run.call("agent", chat, tools=tools)
    assert first is not None
    await run.run_tools(first.tool_calls, chat, tools)
    second = await run.call("agent", chat, tools=tools)
    assert second is not None
    await run.run_tools(second.tool_calls, chat, tools, sent_as="user")
    # Memory consolidation: the first step (its call and two results) becomes a placeholder.
    run.edit(chat, 2, 5, [Message.user("[step 1 omitted]")], reason="memory")
    critic = run.context("critic", messages=[Message.user("Is 'alpha' a Greek letter?")])
    await run.call("critic", critic, turn=False)
    run.add(chat, Message.user(f"A critic said: {critic.messages[-1].text}"))
    final = await run.call("agent", chat, tools=tools)
    assert final is not None
    return run.answer(final)


def run_it(model: Model, critic: Model, image: Path, path: Path, ws: Path) -> Trajectory:
    task = AgentTask(id="t1", question="What is a?", inputs=list(InputSet.from_paths([image])))
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model,
            roles={"perception": model, "critic": critic},
            tools=None,
            budgets=Budgets(),
            workspace=ws,
            trajectory=writer,
        )
        run = AgentRun(task, ctx, agent="recorded")
        return asyncio.run(run.execute(lambda: scaffold(run, image)))


@pytest.fixture()
def recorded(image_file: Path, tmp_path: Path) -> tuple[list[dict[str, Any]], Trajectory, Path]:
    with FakeOpenAIServer() as server:
        server.push(
            reply_tool_calls(("lookup", {"key": "a"}), ("describe", {"image_id": "image_1"})),
            reply_text("A red square."),  # the perception model, inside describe
            reply_tool_calls(("lookup", {"key": "b"}), text="And b?"),
            reply_text("Yes.", reasoning_content="Alpha is the first letter."),  # the critic
            reply_text("<answer>alpha</answer>", reasoning_content="a is alpha."),
        )
        model = get_model(f"vllm:Qwen2.5-Omni-7B@{server.base_url}")
        critic = get_model(f"vllm:critic-7b@{server.base_url}")
        path = tmp_path / "run.jsonl"
        returned = run_it(model, critic, image_file, path, tmp_path / "ws")
        bodies = [r.body for r in server.chat_requests]
    return bodies, returned, path


def test_every_logged_request_equals_the_rebuilt_input(
    recorded: tuple[list[dict[str, Any]], Trajectory, Path],
) -> None:
    bodies, returned, path = recorded
    saved = read_trajectory(path)
    assert saved.status == "answered" and saved.answer == "alpha"
    for traj in (saved, returned):
        contexts = traj.contexts()
        assert len(contexts) == len(bodies) == 5
        for ctx, body in zip(contexts, bodies, strict=True):
            assert ctx.exact and ctx.call.sent is not None
            model = get_model(ctx.call.model)
            rebuilt = model.adapter.request_body(ctx.messages, ctx.tools, ctx.call.sent.config)  # type: ignore[attr-defined]
            assert media_neutral(rebuilt) == media_neutral(body)
        assert [c.role for c in contexts] == ["agent", "perception", "agent", "critic", "agent"]
        agent_ids = {c.context_id for c in contexts if c.role == "agent"}
        assert len(agent_ids) == 1 and len({c.context_id for c in contexts}) == 3


def test_contexts_show_the_purge_the_user_results_and_the_parents(
    recorded: tuple[list[dict[str, Any]], Trajectory, Path],
) -> None:
    bodies, _, path = recorded
    saved = read_trajectory(path)
    first, side, second, critic, last = saved.contexts()
    # The purge: the last call no longer holds step 1's call and results.
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert [m.role for m in last.messages] == [
        "system",
        "user",
        "user",
        "assistant",
        "user",
        "user",
    ]
    assert last.messages[2].text == "[step 1 omitted]"
    assert last.messages[4].text == "beta"  # lookup(b) went back as a user message
    results = saved.tool_results
    assert [r.sent_as for r in results] == ["tool", "tool", "user"]
    # Parents: results point at the call that asked; the side call at that call too.
    assert results[0].parent_id == results[1].parent_id == first.call.id
    assert side.call.parent_id == first.call.id
    assert second.call.parent_id == first.call.id and last.call.parent_id == second.call.id
    # Reasoning is kept: in the call's output and in the conversation on request.
    assert last.reasoning == "a is alpha." and critic.reasoning == "Alpha is the first letter."
    convo = saved.messages(reasoning=True)
    assert convo[-1].text.startswith("<think>\na is alpha.\n</think>")
    assert convo == saved.conversation(reasoning=True)
    assert saved.messages()[-1].text == "<answer>alpha</answer>"
    # Media by path and hash, never inline bytes.
    assert "base64" not in path.read_text() and '"data":"' not in path.read_text()
    assert first.call.sent is not None
    assert all(h.startswith("sha256:") for h in first.call.sent.media.values())
    assert len(bodies) == 5


def test_the_file_stores_each_context_once(
    recorded: tuple[list[dict[str, Any]], Trajectory, Path],
) -> None:
    _, _, path = recorded
    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    sent = [x["sent"] for x in lines if x["kind"] == "model_call"]
    # Each input is the context as the events before it left it (added messages, results sent
    # back, the purge): nothing is stored twice. The side call's context has no other events.
    assert [s["prefix"] for s in sent] == [2, 0, 5, 1, 6]
    assert [len(s["messages"]) for s in sent] == [0, 2, 0, 0, 0]
    assert "tools_same" in sent[2] and "tools" in sent[0]
