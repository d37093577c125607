"""Pictures in token-exact chats, the way vision-language processors take them.

A token-exact adapter renders the chat itself (:mod:`omnilab.models.token_adapter`). With a
multi-modal processor (a Hugging Face ``AutoProcessor``, as verl's agent loops use it) a picture
is an ``{"type": "image", "image": KEY}`` block of the message's content: the processor's chat
template writes its placeholder, and the processor expands the placeholder into as many ids as
the picture's size asks, given the picture itself. ``KEY`` names the picture by its content (the
:class:`~omnilab.models.tokens.TokenLedger` keys conversations by their chats, so an unchanged
picture must give an unchanged block); :class:`MediaChat` keeps the pictures behind the keys.
A video is sent as frames at ``video_frames`` times (each a picture, after a line naming the
clip, as omnilab's OpenAI wire sends frames to a model without video input). Audio and documents
are refused.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from omnilab import _wsread
from omnilab.content import Image, Text, Video
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.providers.openai_wire import _frame_times, tool_prompt
from omnilab.models.types import Message, ToolSpec

__all__ = ["MediaChat", "chat_images", "media_chat"]

Chat = list[dict[str, Any]]


def chat_images(chat: Sequence[dict[str, Any]]) -> list[str]:
    """The picture keys of ``chat``'s image blocks, in order."""
    return [
        str(block["image"])
        for message in chat
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "image"
    ]


@dataclass
class MediaChat:
    """A chat for a processor's template and the pictures its image blocks name."""

    chat: Chat
    pictures: dict[str, Any] = field(default_factory=dict)
    """Each key's picture (a PIL image in RGB)."""

    def images(self, chat: Sequence[dict[str, Any]] | None = None) -> list[Any]:
        """The pictures of ``chat`` (default: the whole chat's), in order."""
        return [self.pictures[k] for k in chat_images(self.chat if chat is None else chat)]


_RECENT: OrderedDict[str, Any] = OrderedDict()
"""The last pictures made, by key: a conversation sends the same pictures on every call."""
_KEEP = 16


def _picture(data: bytes, box: Any, caps: Capabilities, name: str) -> tuple[str, Any]:
    """The key and the picture (RGB, cropped to ``box``, shrunk to ``max_image_edge``) of an
    image file's bytes; the key names the bytes and the options, so the same picture gives the
    same key on every call without hashing its pixels."""
    from omnilab.media.image import crop, resize

    key = (
        "omnilab-image:"
        + hashlib.sha256(data + json.dumps([box, caps.max_image_edge]).encode()).hexdigest()[:32]
    )
    picture = _RECENT.get(key)
    if picture is None:
        # A picture sandboxed code wrote may be a decompression bomb: refused on its header.
        with _wsread.open_image(data, name=name) as opened:
            picture = opened.convert("RGB")
        if box is not None:
            picture = crop(picture, box, name=name)
        picture = resize(picture, caps.max_image_edge)
        _RECENT[key] = picture
        while len(_RECENT) > _KEEP:
            _RECENT.popitem(last=False)
    _RECENT.move_to_end(key)
    return key, picture


def _image(part: Image, caps: Capabilities) -> tuple[str, Any]:
    return _picture(part.read_bytes(), part.box, caps, part.name)


def _frames(part: Video, caps: Capabilities) -> list[tuple[str, Any] | str]:
    from omnilab.media.prepared import jpeg_frames_at
    from omnilab.media.probe import probe

    if part.path is None:
        raise ProviderError(
            ErrorKind.MEDIA, f"video {part.name} must be a file to send as frames; give a path"
        )
    start = part.start or 0.0
    end = part.end if part.end is not None else (probe(part.path).duration or 0.0)
    frames = jpeg_frames_at(
        part.path, _frame_times(start, end, caps.video_frames), max_edge=caps.max_image_edge
    )
    out: list[tuple[str, Any] | str] = [
        f"[video {part.name}, {start:.1f}-{end:.1f} s: {len(frames)} frames]"
    ]
    for frame in frames:
        data = _wsread.read_bytes(frame.path)
        out += [f"[{frame.timestamp:.2f} s]", _picture(data, None, caps, frame.path.name)]
    return out


def _content(message: Message, caps: Capabilities | None, pictures: dict[str, Any]) -> Any:
    if all(isinstance(p, Text) for p in message.content):
        return message.text
    if caps is None:
        raise ProviderError(
            ErrorKind.UNSUPPORTED_MEDIA,
            "token-exact calls take media only with a multi-modal processor (text only here)",
        )
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        pieces: list[tuple[str, Any] | str]
        if isinstance(part, Text):
            pieces = [part.text]
        elif isinstance(part, Image):
            pieces = [_image(part, caps)]
        elif isinstance(part, Video):
            pieces = _frames(part, caps)
        else:
            raise ProviderError(
                ErrorKind.UNSUPPORTED_MEDIA,
                f"token-exact calls take text, images and video frames, not {part.type}",
            )
        for piece in pieces:
            if isinstance(piece, str):
                blocks.append({"type": "text", "text": piece})
            else:
                pictures.setdefault(*piece)
                blocks.append({"type": "image", "image": piece[0]})
    return blocks


def media_chat(
    messages: Sequence[Message], tools: Sequence[ToolSpec], caps: Capabilities | None = None
) -> MediaChat:
    """The messages as plain chat dicts for a chat template: text as strings, a message with
    pictures as a list of text and image blocks (only with ``caps``, the policy's: media are
    refused without); tool calls written as Hermes ``<tool_call>`` blocks in the assistant's
    text, tools described in the system prompt."""
    pictures: dict[str, Any] = {}
    chat: Chat = []
    for m in messages:
        content = _content(m, caps, pictures)
        if m.role == "assistant" and m.tool_calls:
            blocks = [
                "<tool_call>\n"
                + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
                + "\n</tool_call>"
                for c in m.tool_calls
            ]
            content = "\n".join([m.text, *blocks]).strip()
        chat.append({"role": m.role, "content": content})
    if tools:
        described = tool_prompt(tools)
        if chat and chat[0]["role"] == "system" and isinstance(chat[0]["content"], str):
            chat[0] = {"role": "system", "content": f"{chat[0]['content']}\n\n{described}"}
        else:
            chat.insert(0, {"role": "system", "content": described})
    return MediaChat(chat, pictures)
