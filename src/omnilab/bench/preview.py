"""The first prompt of a run, without calling the model (``omnilab eval --show-prompt``).

The agent runs on the first task against a stand-in of its model that records the first request
(messages and tools) and stops the run there. Media parts are shown by kind, input name and
range, never as bytes. The agent's work before its first call (media probing, contact sheets)
happens in a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from omnilab.agents.base import AgentContext
from omnilab.bench.errors import BenchError
from omnilab.bench.executor import TaskExecutor, to_agent_task
from omnilab.bench.task import Task
from omnilab.content import Text
from omnilab.models import GenerateConfig, Message, Model, ModelOutput, ToolSpec
from omnilab.trajectory import TrajectoryWriter

__all__ = ["FirstPrompt", "first_prompt", "render_prompt"]


class FirstPrompt(BaseModel):
    """The first request an agent sends for a task."""

    task_id: str
    model: str
    messages: list[Message]
    tools: list[ToolSpec]


class _Captured(BaseException):
    """Stops the agent at its first model call. A BaseException, so an agent's own guard
    against failing calls (which catches Exception) lets it through."""

    def __init__(self, messages: list[Message], tools: list[ToolSpec]) -> None:
        super().__init__("first prompt captured")
        self.messages = messages
        self.tools = tools


class _CaptureModel(Model):
    """The agent's model with ``generate`` replaced by a recorder that never calls out."""

    def __init__(self, base: Model) -> None:
        super().__init__(base.adapter, name=base.name, retry=base.retry, sink=base.sink)

    async def generate(
        self,
        messages: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        config: GenerateConfig | None = None,
    ) -> ModelOutput:
        """Record the request and stop the run."""
        msgs = [Message.user(messages)] if isinstance(messages, str) else list(messages)
        raise _Captured(msgs, list(tools or []))


async def first_prompt(executor: TaskExecutor, task: Task) -> FirstPrompt:
    """The first request the executor's agent sends for ``task``; :class:`BenchError` when the
    agent ends without calling its model."""
    with tempfile.TemporaryDirectory(prefix="omnilab-preview-") as tmp:
        folder = Path(tmp)
        model = _CaptureModel(executor.model)
        try:
            with TrajectoryWriter(folder / "preview.jsonl") as writer:
                ctx = AgentContext(
                    model=model,
                    roles={n: _CaptureModel(m) for n, m in executor.roles.items()},
                    tools=executor.tools,
                    budgets=executor.budgets,
                    workspace=folder / "workspace",
                    trajectory=writer,
                    on_event=None,
                )
                ctx.workspace.mkdir()
                await executor.agent.run(to_agent_task(task), ctx)
        except _Captured as captured:
            return FirstPrompt(
                task_id=task.id,
                model=model.name,
                messages=captured.messages,
                tools=captured.tools,
            )
    raise BenchError(f"the agent finished task {task.id} without calling its model")


def _part(part: object) -> str:
    if isinstance(part, Text):
        return part.text
    dump = getattr(part, "model_dump", None)
    fields: dict[str, object] = dump(exclude={"data", "path", "type"}) if dump else {}
    extra = ", ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
    name = getattr(part, "name", "?")
    kind = getattr(part, "type", "media")
    return f"[{kind}: {name}{'; ' + extra if extra else ''}]"


def render_prompt(prompt: FirstPrompt) -> str:
    """The prompt as plain text: each message under its role, media as ``[kind: name]``."""
    lines = [f"first prompt of task {prompt.task_id} to {prompt.model}"]
    for message in prompt.messages:
        lines.append(f"--- {message.role} ---")
        lines.extend(_part(p) for p in message.content)
    if prompt.tools:
        lines.append("--- tools ---")
        lines.extend(
            f"{t.name}: {t.description.splitlines()[0] if t.description else ''}"
            for t in prompt.tools
        )
    return "\n".join(lines)
