"""One OmniDPO pair as TRL's conversational preference row.

``{"prompt": [messages], "chosen": [assistant], "rejected": [assistant], "tools": [...],
"images": [...]}``: messages as the SFT export writes them for TRL
(:func:`omnilab.train.chat_formats.trl_message`: text content, or parts with ``{"type":
"image"}`` paired with the ``images`` column; tool calls with their arguments as objects), the
reply's reasoning before its text as ``<think>...</think>``. ``tools`` and ``images`` appear only
when non-empty.
"""

from __future__ import annotations

from typing import Any

from omnilab.models.events import ModelCallEvent
from omnilab.models.types import ModelOutput
from omnilab.train.chat_formats import tool_schemas, trl_message

__all__ = ["pair_row", "trl_message"]

JsonDict = dict[str, Any]


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
        row["tools"] = tool_schemas(list(original.sent.tools))
    if images:
        row["images"] = images
    return row
