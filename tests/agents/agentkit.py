"""Helpers of the agent tests: capability presets, scripted models, the Run record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from omnilab.models.capabilities import Capabilities
from omnilab.models.model import Model
from omnilab.models.providers.scripted import OutputStep, ScriptedAdapter, ScriptStep
from omnilab.models.retry import RetryPolicy
from omnilab.models.types import Message, ModelOutput, ToolCall
from omnilab.trajectory import Event, Trajectory

ALL = Capabilities(image=True, audio=True, video=True, documents=True)
VISION = Capabilities(image=True)
TEXT_ONLY = Capabilities()


def scripted(
    steps: Sequence[ScriptStep],
    *,
    caps: Capabilities = ALL,
    name: str = "scripted:agent",
    attempts: int = 1,
) -> tuple[Model, ScriptedAdapter]:
    """A scripted model with the given capability flags, and its adapter (to read requests)."""
    adapter = ScriptedAdapter(steps, name=name, capabilities=caps)
    model = Model(adapter, name=name, retry=RetryPolicy(max_attempts=attempts, backoff_s=0.0))
    return model, adapter


def calls(*pairs: tuple[str, dict[str, object]], bad: str | None = None) -> OutputStep:
    """One reply calling every tool in ``pairs`` (and one with unparsable arguments if ``bad``)."""
    tool_calls = [ToolCall(name=n, arguments=a) for n, a in pairs]
    if bad is not None:
        tool_calls.append(ToolCall(name=bad, parse_error="Expecting ',' delimiter"))
    message = Message.assistant("Let me check.", tool_calls=tool_calls)
    return OutputStep(output=ModelOutput(message=message, finish_reason="tool_calls"))


@dataclass
class Run:
    """A finished run: what the agent returned, what the file holds, and the events seen live."""

    returned: Trajectory
    saved: Trajectory
    live: list[Event]
    workspace: Path

    @property
    def kinds(self) -> list[str]:
        return [e.kind for e in self.saved.events]


RunAgent = Callable[..., Run]
"""``run_agent(model, files, question, *, tools, budgets, roles, **options) -> Run``."""
