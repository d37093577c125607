"""The hindsight verifier of tree exploration, and the text views of steps that judges read.

The verifier sees the task, the correct answer, the path so far and the candidate next steps
(each with its tool observations, or its final answer), and replies with one verdict per
candidate (keep or prune, a score in [0, 1]). Its prompt is ``prompts/explore_verifier.txt``
(our wording: OmniGAIA §4.2 gives none). The reply is constrained to :class:`Verdicts` where the
provider supports JSON schemas; a reply that is still unreadable prunes every candidate, and is
recorded as such.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from omnilab.agents.templates import render_in
from omnilab.models.model import Model
from omnilab.models.types import GenerateConfig, Message
from omnilab.textcut import cut_text
from omnilab.train.explore_replay import BranchStep
from omnilab.trajectory import ToolResultEvent

__all__ = [
    "Verdict",
    "Verdicts",
    "read_json_object",
    "render_messages",
    "render_step",
    "verify",
]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
MESSAGE_CHARS = 1500
"""Each message or observation is cut (head and tail) to this many characters for a judge."""


class Verdict(BaseModel):
    """The verifier's word on one candidate."""

    candidate: int = Field(ge=1)
    keep: bool
    score: float = Field(default=0.0, ge=0.0, le=1.0)
    reason: str = ""


class Verdicts(BaseModel):
    """The verifier's reply: one verdict per candidate."""

    verdicts: list[Verdict]


def read_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a judge's reply (bare, fenced, or the outermost braces), else ``None``."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(body[start : end + 1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def render_messages(messages: Sequence[Message], *, limit: int = MESSAGE_CHARS) -> str:
    """A plain-text view of a conversation: one block per message, tool calls spelled out, media
    named (a judge reads text)."""
    blocks: list[str] = []
    for message in messages:
        lines = [f"[{message.role}] {cut_text(message.text.strip(), limit)}"]
        for part in message.content:
            if part.type != "text":
                lines.append(f"  ({part.type} input)")
        for call in message.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False)
            lines.append(f"  -> calls {call.name}({cut_text(args, limit)})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_step(step: BranchStep, *, limit: int = MESSAGE_CHARS) -> str:
    """One step as a judge reads it: the reply, then what its tool calls returned, or the final
    answer when the run ended there."""
    reply = step.reply
    if reply is None or step.call is None:
        return "(no step: the run ended before it)"
    out = [render_messages([reply.message], limit=limit)]
    for event in step.trajectory.events:
        if isinstance(event, ToolResultEvent) and event.parent_id == step.call.id:
            out.append(f"  <- {event.name} returned: {cut_text(event.result.text.strip(), limit)}")
    if step.finished:
        final = step.trajectory.final
        answer = final.answer if final is not None else None
        out.append(f"  (the run ended here; final answer: {answer!r})")
    return "\n".join(out)


async def verify(
    verifier: Model,
    *,
    question: str,
    answers: Sequence[str],
    path: str,
    candidates: Sequence[str],
) -> tuple[list[Verdict], str, str | None, int]:
    """Ask ``verifier`` about ``candidates``: the verdicts (one per candidate, in order; a
    candidate the reply leaves out is pruned), the reply text, what was wrong with the reply
    (``None`` when it was readable), and the tokens the call took."""
    listed = "\n\n".join(f"Candidate {i}:\n{text}" for i, text in enumerate(candidates, 1))
    prompt = render_in(
        "omnilab.train",
        "explore_verifier",
        count=len(candidates),
        question=question,
        answer=" / ".join(answers),
        path=path or "(no steps yet: the candidates are first steps)",
        candidates=listed,
    )
    output = await verifier.generate(
        [Message.user(prompt)], config=GenerateConfig(response_format=Verdicts)
    )
    reply = output.text
    data = read_json_object(reply)
    problem: str | None = None
    parsed: list[Verdict] = []
    if data is None:
        problem = "the verifier's reply holds no JSON object"
    else:
        try:
            parsed = Verdicts.model_validate(data).verdicts
        except ValidationError as e:
            problem = f"the verifier's reply does not fit the schema: {e.errors()[0]['msg']}"
    by_index = {v.candidate: v for v in parsed}
    missing = "not judged by the verifier" if problem is None else problem
    verdicts = [
        by_index.get(i, Verdict(candidate=i, keep=False, reason=missing))
        for i in range(1, len(candidates) + 1)
    ]
    return verdicts, reply, problem, output.usage.total_tokens
