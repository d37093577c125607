"""One OmniDPO pair as TRL's conversational preference row.

``{"prompt": [messages], "chosen": [assistant], "rejected": [assistant], "tools": [...],
"images": [...]}``: messages as chat templates take them (text content, or a list of parts when
there are images, each ``{"type": "image"}`` paired with the next entry of ``images``; audio and
video stay file references), tool calls with their arguments as objects, the reply's reasoning
before its text as ``<think>...</think>``. ``tools`` and ``images`` appear only when non-empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnilab.content import Text
from omnilab.models.events import ModelCallEvent
from omnilab.models.types import Message, ModelOutput

__all__ = ["pair_row", "trl_message"]

JsonDict = dict[str, Any]


def _path(path: Path | None) -> str:
    return str(path) if path is not None else ""


def trl_message(message: Message, images: list[str]) -> JsonDict:
    """``message`` as a TRL conversational message; image paths are appended to ``images``."""
    content: Any
    if all(isinstance(p, Text) for p in message.content):
        content = message.text
    else:
        content = []
        for part in message.content:
            if isinstance(part, Text):
                content.append({"type": "text", "text": part.text})
            elif part.type == "image":
                images.append(_path(part.path))
                content.append({"type": "image"})
            else:
                content.append({"type": "text", "text": f"<{part.type}: {_path(part.path)}>"})
    row: JsonDict = {"role": message.role, "content": content}
    if message.tool_calls:
        row["tool_calls"] = [
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.role == "tool":
        row["tool_call_id"] = message.tool_call_id
    return row


def _reply(output: ModelOutput, images: list[str]) -> JsonDict:
    row = trl_message(output.message, images)
    if output.reasoning and isinstance(row["content"], str):
        row["content"] = f"<think>\n{output.reasoning}\n</think>\n{row['content']}"
    return row


def pair_row(original: ModelCallEvent, corrected: ModelOutput) -> JsonDict:
    """The row of one pair: the original call's exact input as ``prompt``, ``corrected`` as
    ``chosen`` and the original reply as ``rejected``."""
    assert original.sent is not None and original.output is not None
    images: list[str] = []
    row: JsonDict = {
        "prompt": [trl_message(m, images) for m in original.sent.messages],
        "chosen": [_reply(corrected, images)],
        "rejected": [_reply(original.output, images)],
    }
    if original.sent.tools:
        row["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in original.sent.tools
        ]
    if images:
        row["images"] = images
    return row
