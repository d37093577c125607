"""Messages to OpenAI chat-completions wire format, media included, as capability flags say.

Images go as ``image_url`` data URLs; audio as ``input_audio`` (WAV or MP3; other formats and
time ranges are cut to 16 kHz WAV); video as ``video_url`` where the model takes video, else as
sampled frames with their times plus the audio track when the model takes audio; documents as
``file`` parts, or inlined as text when they are text. Media that a model cannot take raise
``UNSUPPORTED_MEDIA`` before anything is sent.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnilab import _wsread
from omnilab.content import Audio, Content, Document, Image, Text, Video
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.providers.wire_body import FileData, file_data, materialize
from omnilab.models.types import Message, ResponseFormat, TokenLogprob, ToolSpec, TopLogprob

if TYPE_CHECKING:
    from PIL import Image as PILImage

__all__ = [
    "has_media",
    "response_format_prompt",
    "tool_prompt",
    "wire_logprobs",
    "wire_messages",
    "wire_response_format",
    "wire_tool_choice",
    "wire_tools",
]

_SENDABLE_IMAGES = {"image/png", "image/jpeg", "image/webp", "image/gif"}
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def has_media(messages: Sequence[Message]) -> bool:
    """Whether any message carries a non-text part."""
    return any(not isinstance(p, Text) for m in messages for p in m.content)


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _file_url(mime: str, path: Path) -> FileData:
    """A data URL of a file's bytes, read only when the request is written."""
    return file_data(path, f"data:{mime};base64,")


def _url(mime: str, path: Path | None, data: bytes | None) -> str | FileData:
    """A data URL of inline bytes (in memory already) or of a file (streamed)."""
    if data is None and path is not None:
        return _file_url(mime, path)
    return _data_url(mime, data or b"")


def _unsupported(model: str, kind: str, name: str, flag: str) -> ProviderError:
    return ProviderError(
        ErrorKind.UNSUPPORTED_MEDIA,
        f"{model} does not take {kind} ({name}); capability flag '{flag}' is off",
        sent=False,
    )


def _encode(image: PILImage.Image, fmt: str) -> tuple[str, bytes]:
    buf = io.BytesIO()
    if fmt == "JPEG":
        image.convert("RGB").save(buf, format="JPEG", quality=90)
        return "image/jpeg", buf.getvalue()
    image.save(buf, format="PNG")
    return "image/png", buf.getvalue()


def _image_part(part: Image, caps: Capabilities, model: str) -> dict[str, Any]:
    if not caps.image:
        raise _unsupported(model, "images", part.name, "image")
    mime = part.guess_mime("image/png")
    if part.box is None and caps.max_image_edge is None and mime in _SENDABLE_IMAGES:
        return {"type": "image_url", "image_url": {"url": _url(mime, part.path, part.data)}}
    if part.data is None and part.path is not None and _wsread.untrusted_root(part.path) is None:
        from omnilab.media.prepared import fitted_png

        # Cut and shrunk once per image content, crop and size: turns, samples, tasks and
        # runs that send the same picture reuse the file. A picture under a workspace is read
        # below, by _wsread's rules, and never keyed into the shared cache.
        png = fitted_png(part.path, part.box, caps.max_image_edge, name=part.name)
        return {"type": "image_url", "image_url": {"url": _file_url("image/png", png)}}
    data = part.read_bytes()
    from omnilab.media.image import crop, resize

    # A picture sandboxed code wrote may be a decompression bomb: refused on its header.
    with _wsread.open_image(data, name=part.name) as opened:
        picture = opened.convert("RGB")
    if part.box is not None:
        picture = crop(picture, part.box, name=part.name)
    picture = resize(picture, caps.max_image_edge)
    mime, data = _encode(picture, "PNG")
    return {"type": "image_url", "image_url": {"url": _data_url(mime, data)}}


def _audio_wire(path: Path | None, data: bytes | None, fmt: str) -> dict[str, Any]:
    payload: str | FileData
    if data is None and path is not None:
        payload = file_data(path)
    else:
        payload = base64.b64encode(data or b"").decode("ascii")
    return {"type": "input_audio", "input_audio": {"data": payload, "format": fmt}}


def _audio_part(part: Audio, caps: Capabilities, model: str, as_url: bool) -> dict[str, Any]:
    if not caps.audio:
        raise _unsupported(model, "audio", part.name, "audio")
    mime = part.guess_mime("application/octet-stream")
    fmt = _AUDIO_FORMATS.get(mime)
    if fmt is not None and part.start is None and part.end is None and as_url:
        kind = "audio/wav" if fmt == "wav" else mime  # data:audio/wav;base64,... for a WAV
        return {"type": "audio_url", "audio_url": {"url": _url(kind, part.path, part.data)}}
    if fmt is not None and part.start is None and part.end is None:
        return _audio_wire(part.path, part.data, fmt)
    if part.path is None:
        raise ProviderError(
            ErrorKind.MEDIA,
            f"audio {part.name} must be WAV or MP3 without a time range when given as bytes; "
            "give a path instead",
        )
    from omnilab.media.audio import audio_segment

    wav = audio_segment(part.path, part.start or 0.0, part.end)
    return _audio_wire(wav, None, "wav")


def _frame_times(start: float, end: float, count: int) -> list[float]:
    # Centres of equal slices: never the very last instant, which may hold no frame.
    step = (end - start) / count
    return [start + step * (i + 0.5) for i in range(count)]


def _video_parts(part: Video, caps: Capabilities, model: str) -> list[dict[str, Any]]:
    ranged = part.start is not None or part.end is not None
    if caps.video:
        if not ranged:
            mime = part.guess_mime("video/mp4")
            return [{"type": "video_url", "video_url": {"url": _url(mime, part.path, part.data)}}]
        if part.path is not None:
            from omnilab.media.clips import clip
            from omnilab.media.probe import probe

            end = part.end if part.end is not None else (probe(part.path).duration or 0.0)
            cut = clip(part.path, part.start or 0.0, end)
            return [
                {
                    "type": "video_url",
                    "video_url": {"url": _file_url("video/mp4", cut)},
                }
            ]
    if not caps.image:
        raise _unsupported(model, "video", part.name, "video")
    if part.path is None:
        raise ProviderError(
            ErrorKind.MEDIA,
            f"video {part.name} must be a file to send as frames; give a path instead",
        )
    from omnilab.media.audio import audio_segment
    from omnilab.media.prepared import jpeg_frames_at
    from omnilab.media.probe import probe

    info = probe(part.path)
    start = part.start or 0.0
    end = part.end if part.end is not None else (info.duration or 0.0)
    # Decoded and encoded once per video content, times and size (the media cache).
    frames = jpeg_frames_at(
        part.path, _frame_times(start, end, caps.video_frames), max_edge=caps.max_image_edge
    )
    wire: list[dict[str, Any]] = [
        {
            "type": "text",
            "text": f"[video {part.name}, {start:.1f}-{end:.1f} s: {len(frames)} frames]",
        }
    ]
    for frame in frames:
        wire.append({"type": "text", "text": f"[{frame.timestamp:.2f} s]"})
        wire.append(
            {"type": "image_url", "image_url": {"url": _file_url("image/jpeg", frame.path)}}
        )
    if caps.audio and info.has_audio:
        wire.append({"type": "text", "text": f"[audio track of {part.name}]"})
        wire.append(_audio_wire(audio_segment(part.path, start, end), None, "wav"))
    return wire


def _document_part(part: Document, caps: Capabilities, model: str) -> dict[str, Any]:
    mime = part.guess_mime("application/octet-stream")
    if caps.documents and not mime.startswith("text/"):
        url = _url(mime, part.path, part.data)
        return {"type": "file", "file": {"filename": part.name, "file_data": url}}
    data = part.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _unsupported(model, "binary documents", part.name, "documents") from None
    return {"type": "text", "text": f"[document {part.name}]\n{text}"}


def _part(
    part: Content, caps: Capabilities, model: str, audio_url: bool = False
) -> list[dict[str, Any]]:
    if isinstance(part, Text):
        return [{"type": "text", "text": part.text}]
    # Here, not at the top: importing the media package loads PyAV, which a text-only run (and
    # every start of an eval process) would otherwise pay for.
    from omnilab.media.errors import MediaError

    try:
        if isinstance(part, Image):
            return [_image_part(part, caps, model)]
        if isinstance(part, Audio):
            return [_audio_part(part, caps, model, audio_url)]
        if isinstance(part, Video):
            return _video_parts(part, caps, model)
        return [_document_part(part, caps, model)]
    except MediaError as e:
        raise ProviderError(ErrorKind.MEDIA, e.message) from None
    except OSError as e:
        raise ProviderError(ErrorKind.MEDIA, f"cannot read {part.type}: {e}") from None


def _content(parts: list[dict[str, Any]], *, as_parts: bool = False) -> str | list[dict[str, Any]]:
    # Plain strings where possible: some servers (older llama.cpp, Ollama) only take strings.
    if not as_parts and all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def wire_messages(
    messages: Sequence[Message],
    caps: Capabilities,
    model: str,
    *,
    files: bool = False,
    text_parts: bool = False,
    audio_url: bool = False,
) -> list[dict[str, Any]]:
    """The ``messages`` field of a chat-completions request.

    With ``files``, media payloads read from files stay :class:`FileData` references, for
    :func:`~omnilab.models.providers.wire_body.stream_body` to read while sending; without it
    they are the text itself. With ``text_parts`` a system or user message of text only keeps
    its parts as a list (``GenerateConfig.text_parts``) instead of one string; with
    ``audio_url`` a whole WAV or MP3 goes as vLLM's ``audio_url`` data URL
    (``GenerateConfig.audio_url``) instead of ``input_audio``.
    """
    wire = _wire_messages(messages, caps, model, text_parts, audio_url)
    return wire if files else materialize(wire)


def _wire_messages(
    messages: Sequence[Message],
    caps: Capabilities,
    model: str,
    text_parts: bool = False,
    audio_url: bool = False,
) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    # User turns with the media of tool results wait until the run of tool messages ends: the
    # API wants every tool message right after the assistant message that made the calls.
    media_turns: list[dict[str, Any]] = []
    for message in messages:
        parts = [w for p in message.content for w in _part(p, caps, model, audio_url)]
        if message.role == "tool" and caps.tool_media:
            wire.append(_tool_entry(message, _content(parts)))
            continue
        if message.role == "tool":
            head, rest = _split_tool_parts(parts)
            wire.append(_tool_entry(message, _content(head)))
            if rest:
                note = {
                    "type": "text",
                    "text": f"[media returned by tool call {message.tool_call_id}]",
                }
                media_turns.append({"role": "user", "content": [note, *rest]})
            continue
        wire += media_turns
        media_turns = []
        as_parts = text_parts and message.role in ("system", "user")
        entry: dict[str, Any] = {
            "role": message.role,
            "content": _content(parts, as_parts=as_parts),
        }
        if message.role == "assistant" and message.tool_calls:
            entry["content"] = _content(parts) or None
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
        wire.append(entry)
    return wire + media_turns


def _tool_entry(message: Message, content: str | list[dict[str, Any]]) -> dict[str, Any]:
    """A tool message; one answering no call id (OmniGAIA's released loop sends all results
    of a reply in one such message) goes without the field."""
    entry: dict[str, Any] = {"role": "tool", "content": content}
    if message.tool_call_id is not None:
        entry = {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    return entry


def _split_tool_parts(
    parts: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A tool result's wire parts as (tool message, media turn). Tool messages carry text
    only, so the media follow in a user turn together with the text between them, from the
    label of the first one on: each frame keeps the label (its time) the tool put before it."""
    first = next((i for i, p in enumerate(parts) if p["type"] != "text"), len(parts))
    if first == len(parts):
        return parts, []
    if first > 0:
        first -= 1
    head = [*parts[:first], {"type": "text", "text": "[media follow in the next message]"}]
    return head, parts[first:]


def wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The ``tools`` field of a request."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def wire_tool_choice(choice: str | None) -> str | dict[str, Any] | None:
    """The ``tool_choice`` field: a mode, or a named function that must be called."""
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def tool_prompt(tools: Sequence[ToolSpec]) -> str:
    """A system-prompt section describing tools, for models without native tool calls.

    The Hermes ``<tool_call>`` format it asks for is what the recovery parser reads back.
    """
    listed = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters})
        for t in tools
    )
    return (
        "You can call these tools:\n"
        f"{listed}\n"
        "To call one, answer with exactly one block per call:\n"
        '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>'
    )


def wire_response_format(fmt: ResponseFormat) -> dict[str, Any]:
    """The ``response_format`` field asking for JSON that matches a schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": fmt.name, "schema": fmt.json_schema, "strict": fmt.strict},
    }


def response_format_prompt(fmt: ResponseFormat) -> str:
    """A system-prompt section asking for JSON output, for models whose output cannot be
    constrained to a schema (capability flag ``json_schema`` off)."""
    return (
        "Answer with one JSON value only (no other text, no code fence) that matches this "
        f"JSON schema:\n{json.dumps(fmt.json_schema)}"
    )


def _alternatives(raw: object) -> list[TopLogprob]:
    if not isinstance(raw, list):
        return []
    return [
        TopLogprob(token=alt["token"], logprob=float(alt["logprob"]))
        for alt in raw
        if isinstance(alt, dict)
        and isinstance(alt.get("token"), str)
        and isinstance(alt.get("logprob"), int | float)
    ]


def wire_logprobs(choice: dict[str, Any]) -> list[TokenLogprob] | None:
    """The per-token log probabilities of a chat-completion choice (``logprobs.content``), or
    ``None`` when the server sent none."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    tokens: list[TokenLogprob] = []
    for item in content:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            continue
        logprob = item.get("logprob")
        if not isinstance(logprob, int | float):
            continue
        tokens.append(
            TokenLogprob(
                token=item["token"],
                logprob=float(logprob),
                top_logprobs=_alternatives(item.get("top_logprobs")),
            )
        )
    return tokens
