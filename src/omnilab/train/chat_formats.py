"""SFT rows in the chat formats trainers read: OpenAI fine-tuning, LLaMA-Factory ShareGPT, TRL.

Each function turns one :class:`~omnilab.train.examples.Example` into one JSON row. Media stay
file paths (never inline bytes). The loss mask is the example's ``trained`` flags, written the
way each trainer reads a mask:

* ``openai``: ``weight`` 1 on trained assistant messages, 0 on the others (OpenAI's fine-tuning
  reads ``weight`` on assistant messages only; system, user and tool messages are never trained).
* ``sharegpt``: LLaMA-Factory trains every ``gpt`` / ``function_call`` turn and never a ``human``
  or ``observation`` turn; a per-call example (only its last reply trained) is exported for
  ``mask_history: true``, which trains the last turn only.
* ``trl``: a whole-trajectory example is ``messages`` (train with ``assistant_only_loss=True``);
  a per-call example is ``prompt`` + ``completion`` (TRL trains on the completion only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omnilab.content import Text
from omnilab.models import Message, ToolCall, ToolSpec
from omnilab.train.examples import Example

__all__ = [
    "media_path",
    "openai_row",
    "sharegpt_dataset_info",
    "sharegpt_row",
    "tool_schemas",
    "trl_message",
    "trl_row",
]

JsonDict = dict[str, Any]


def media_path(path: Path | None) -> str:
    """A media part's file as the row stores it: absolute when it resolves from here."""
    if path is None:
        return ""
    return str(path.resolve()) if not path.is_absolute() and path.exists() else str(path)


def tool_schemas(tools: list[ToolSpec]) -> list[JsonDict]:
    """Tools as OpenAI-style function schemas (what OpenAI, TRL and chat templates take)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _openai_calls(calls: list[ToolCall]) -> list[JsonDict]:
    # OpenAI's chat format carries a call's arguments as a JSON string.
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in calls
    ]


# --- OpenAI ------------------------------------------------------------------------------------


def _openai_content(message: Message) -> str | list[JsonDict]:
    if all(isinstance(p, Text) for p in message.content):
        return message.text
    parts: list[JsonDict] = []
    for part in message.content:
        if isinstance(part, Text):
            parts.append({"type": "text", "text": part.text})
        elif part.type == "image" and message.role == "user":
            parts.append({"type": "image_url", "image_url": {"url": media_path(part.path)}})
        else:
            # OpenAI's chat fine-tuning takes images in user messages only: any other media
            # stays a visible reference to its file.
            parts.append({"type": "text", "text": f"<{part.type}: {media_path(part.path)}>"})
    if message.role != "user":
        return "\n".join(p["text"] for p in parts)
    return parts


def openai_row(example: Example) -> JsonDict:
    """``{"messages": [...], "tools": [...]}``, ``weight`` on every assistant message."""
    messages: list[JsonDict] = []
    for message, trained in zip(example.messages, example.trained, strict=True):
        row: JsonDict = {"role": message.role, "content": _openai_content(message)}
        if message.role == "assistant":
            if message.tool_calls:
                row["tool_calls"] = _openai_calls(message.tool_calls)
            row["weight"] = 1 if trained else 0
        if message.role == "tool":
            row["tool_call_id"] = message.tool_call_id
        messages.append(row)
    out: JsonDict = {"messages": messages}
    if example.tools:
        out["tools"] = tool_schemas(example.tools)
    return out


# --- LLaMA-Factory ShareGPT ----------------------------------------------------------------------

_PROMPT_SIDE = {"user": "human", "tool": "observation"}


def _sharegpt_value(message: Message, media: dict[str, list[str]]) -> str:
    pieces: list[str] = []
    for part in message.content:
        if isinstance(part, Text):
            pieces.append(part.text)
        elif part.type in ("image", "video", "audio"):
            # LLaMA-Factory pairs the n-th <image> of a row with the n-th entry of "images".
            media[f"{part.type}s"].append(media_path(part.path))
            pieces.append(f"<{part.type}>")
    return "\n".join(pieces)


def sharegpt_row(example: Example) -> JsonDict:
    """``{"conversations": [{"from", "value"}], "system", "tools", "images", "videos", "audios"}``.

    Consecutive prompt-side messages (tool results followed by a step notice) are one turn, as
    LLaMA-Factory wants human/observation and gpt/function_call turns to alternate; an assistant
    turn with tool calls is a ``function_call`` whose value is the calls as JSON (its text, if
    any, goes before the JSON on its own line).
    """
    media: dict[str, list[str]] = {"images": [], "videos": [], "audios": []}
    system: list[str] = []
    turns: list[JsonDict] = []
    for message in example.messages:
        if message.role == "system":
            system.append(_sharegpt_value(message, media))
            continue
        value = _sharegpt_value(message, media)
        if message.role == "assistant":
            if message.tool_calls:
                calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
                body = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
                value = f"{value}\n{body}" if value else body
                turns.append({"from": "function_call", "value": value})
            else:
                turns.append({"from": "gpt", "value": value})
            continue
        side = _PROMPT_SIDE.get(message.role, "human")
        if turns and turns[-1]["from"] in ("human", "observation"):
            turns[-1]["value"] += "\n" + value
        else:
            turns.append({"from": side, "value": value})
    row: JsonDict = {"conversations": turns, "system": "\n".join(system)}
    row["tools"] = json.dumps(
        [s["function"] for s in tool_schemas(example.tools)], ensure_ascii=False
    )
    row.update(media)
    return row


def sharegpt_dataset_info(name: str, file_name: str) -> JsonDict:
    """The ``dataset_info.json`` entry LLaMA-Factory needs for a ``sharegpt`` export."""
    return {
        name: {
            "file_name": file_name,
            "formatting": "sharegpt",
            "columns": {
                "messages": "conversations",
                "system": "system",
                "tools": "tools",
                "images": "images",
                "videos": "videos",
                "audios": "audios",
            },
            "tags": {
                "role_tag": "from",
                "content_tag": "value",
                "user_tag": "human",
                "assistant_tag": "gpt",
                "observation_tag": "observation",
                "function_tag": "function_call",
                "system_tag": "system",
            },
        }
    }


# --- TRL -----------------------------------------------------------------------------------------


def trl_message(message: Message, images: list[str]) -> JsonDict:
    """``message`` as TRL's conversational message; image paths go to ``images`` (the row's
    column). Shared by the SFT rows and the DPO pairs (:mod:`omnilab.train.dpo_rows`)."""
    if all(isinstance(p, Text) for p in message.content):
        content: Any = message.text
    else:
        content = []
        for part in message.content:
            if isinstance(part, Text):
                content.append({"type": "text", "text": part.text})
            else:
                # TRL's vision collator pairs each {"type": "image"} with the next entry of the
                # row's "images"; audio and video have no column there, so they stay paths.
                if part.type == "image":
                    images.append(media_path(part.path))
                    content.append({"type": "image"})
                else:
                    content.append(
                        {"type": "text", "text": f"<{part.type}: {media_path(part.path)}>"}
                    )
    row: JsonDict = {"role": message.role, "content": content}
    if message.tool_calls:
        row["tool_calls"] = [
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.role == "tool":
        row["tool_call_id"] = message.tool_call_id
    return row


def trl_row(example: Example) -> JsonDict:
    """A whole trajectory: ``{"messages", "tools"}``; one call: ``{"prompt", "completion", "tools"}``
    (plus ``images`` when the chat holds images)."""
    images: list[str] = []
    chat = [trl_message(m, images) for m in example.messages]
    row: JsonDict
    if example.step is None:
        row = {"messages": chat}
    else:
        row = {"prompt": chat[:-1], "completion": chat[-1:]}
    row["tools"] = tool_schemas(example.tools)
    if images:
        row["images"] = images
    return row
