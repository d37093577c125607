"""A view that sandboxed code replaced by a link is dropped with a notice, and the run goes on
(issue 42): before, the link was refused (nothing leaked) but the run ended with a model-call
error."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from omnilab import _wsread
from omnilab.agents import AgentContext, AgentTask, Budgets
from omnilab.agents.session import AgentRun
from omnilab.agents.view_check import vet_views
from omnilab.agents.view_files import place_view
from omnilab.content import Image, Text
from omnilab.models import Message
from omnilab.models.capabilities import Capabilities
from omnilab.models.model import Model
from omnilab.models.providers import scripted as s
from omnilab.models.providers.openai_wire import wire_messages
from omnilab.models.providers.scripted import ScriptedAdapter
from omnilab.models.types import GenerateConfig, ModelOutput, ToolSpec
from omnilab.trajectory import ContextEdit, RunStatus, TrajectoryWriter, read_trajectory


def _replaced_view(tmp_path: Path, image_file: Path) -> tuple[Path, Path]:
    """A workspace with a view, then sandboxed code's swap: the view becomes a link to a secret."""
    ws = tmp_path / "ws"
    view = place_view(image_file.read_bytes(), ws / "views", "image_1.png")
    secret = tmp_path / "secret.png"
    secret.write_bytes(image_file.read_bytes())
    secret.chmod(0o600)
    view.unlink()
    view.symlink_to(secret)
    return ws, view


class _WireAdapter(ScriptedAdapter):
    """A scripted model that reads its request's media as the OpenAI wire adapter does (by the
    safe-open rules, for every call), as every real provider does."""

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        wire_messages(list(messages), Capabilities(image=True), "m")
        return await super().generate(messages, tools, config)


def test_vet_views_replaces_only_the_broken_part(tmp_path: Path, image_file: Path) -> None:
    ws, view = _replaced_view(tmp_path, image_file)
    good = place_view(image_file.read_bytes(), ws / "views", "image_2.png")
    outside = Image(path=image_file)  # the user's own file: not the sandbox's to change
    messages = [Message.user("look", Image(path=view), Image(path=good)), Message.user(outside)]
    edits = vet_views(messages)
    assert list(edits) == [0]
    said, notice, kept = edits[0].content
    assert isinstance(notice, Text) and "image_1.png was removed" in notice.text
    assert kept == Image(path=good) and said == Text(text="look")
    assert _wsread.untrusted_root(view) is not None


def test_a_replaced_view_is_dropped_and_the_run_goes_on(tmp_path: Path, image_file: Path) -> None:
    ws, view = _replaced_view(tmp_path, image_file)
    adapter = _WireAdapter([s.text("<answer>a square</answer>")], name="wire")
    model = Model(adapter, name="wire")
    path = tmp_path / "run.jsonl"

    async def body(run: AgentRun) -> RunStatus:
        chat = run.context(messages=[Message.user("what is it?", Image(path=view))])
        await run.call("agent", chat)
        return run.answer("<answer>square</answer>")

    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model,
            roles={},
            tools=None,
            budgets=Budgets(max_turns=3),
            workspace=ws,
            trajectory=writer,
        )
        run = AgentRun(AgentTask(id="t", question="q?"), ctx, agent="test")
        returned = asyncio.run(run.execute(lambda: body(run)))
    assert returned.status == "answered", returned.status
    sent = adapter.requests[0][0][0].content
    assert not [p for p in sent if isinstance(p, Image)]
    assert any(isinstance(p, Text) and "replaced the file" in p.text for p in sent)
    edits = [e for e in read_trajectory(path).events if isinstance(e, ContextEdit)]
    assert edits and "replaced by sandboxed code" in edits[0].reason
