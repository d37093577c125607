"""How events become lines of a trajectory file and back (schema 2).

Two things happen on the way to disk:

- **Each context's messages are stored once.** A model call's input (``sent``) is written as
  ``{"prefix": k, "messages": [...], ...}``: the first ``k`` messages are the first ``k`` of
  its context as the events before it left it (the previous call's input and reply, then the
  messages added, the tool results sent back and the edits since:
  :func:`~omnilab.trajectory.contexts.advance`), and ``messages`` are the ones after them. A
  scaffold that records what it appends gets ``messages`` empty; one that edits its context (a
  purge) gets the shorter shared prefix, and the rest again. Only the count depends on the
  other events; the messages are compared as sent, so the input is exact either way. The reader
  rebuilds every call's full input, so consumers never see the encoding. ``"tools_same": true``
  likewise stands for the previous call's tool list. A call with no context id is stored whole.
- **Media by path and hash, never inline bytes.** Every media file a call's new messages refer
  to gets its SHA-256 in ``sent.media`` (files over 64 MiB: ``sha256-ends:``, a hash of the size
  and the first and last 4 MiB, so a long video is not read whole on every run). Media held
  inline (``data``) in any event are written once to ``<trajectory>.media/<hash>.<ext>`` and the
  event refers to that file instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from omnilab import _wsread
from omnilab._atomic import write_atomic
from omnilab._memo import IdentityMemo
from omnilab.content import Text
from omnilab.models.events import CallInput, ModelCallEvent
from omnilab.models.types import GenerateConfig, Message, ToolSpec
from omnilab.trajectory.contexts import advance
from omnilab.trajectory.events import Event, EventAdapter

__all__ = ["EventDecoder", "EventEncoder", "file_hash"]

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
_TOOLS: TypeAdapter[list[ToolSpec]] = TypeAdapter(list[ToolSpec])
# Every task's first call offers the same spec objects: their JSON is made once.
_TOOL_TEXTS: IdentityMemo[str] = IdentityMemo()
_MEDIA_TYPES = frozenset({"image", "audio", "video", "document"})
_WHOLE_LIMIT = 64 * 1024 * 1024
_END_BYTES = 4 * 1024 * 1024
_HASHES: dict[tuple[str, int, int], str] = {}
_HASHES_KEPT = 20_000  # bounded: a long evaluation makes new crops and frames for every task


def file_hash(path: Path) -> str | None:
    """``sha256:<hex>`` of a file (``sha256-ends:`` past 64 MiB, see the module docstring);
    ``None`` when it cannot be read. Cached by path, size and modification time."""
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    found = _HASHES.get(key)
    if found is not None:
        return found
    try:
        # The harness's safe open: a view in a workspace may have been swapped for a link or a
        # FIFO by the task's code (never followed, never waited on).
        fd, _ = _wsread.open_file(path)
        with os.fdopen(fd, "rb") as f:
            if stat.st_size <= _WHOLE_LIMIT:
                # file_digest reads into one reused buffer: no large allocation per file.
                value = f"sha256:{hashlib.file_digest(f, 'sha256').hexdigest()}"
            else:
                digest = hashlib.sha256(str(stat.st_size).encode())
                digest.update(f.read(_END_BYTES))
                f.seek(-_END_BYTES, os.SEEK_END)
                digest.update(f.read(_END_BYTES))
                value = f"sha256-ends:{digest.hexdigest()}"
    except OSError:
        return None
    if len(_HASHES) >= _HASHES_KEPT:
        _HASHES.clear()
    _HASHES[key] = value
    return value


def _same(a: object, b: object) -> bool:
    return a is b or a == b


@dataclass
class _Thread:
    """What one context looked like after its last call: input plus reply, and the tools."""

    conversation: list[Message] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)
    media: dict[str, str] = field(default_factory=dict)


def _follow(threads: dict[str, _Thread], event: Event) -> None:
    """Keep a context's messages up to date with an event that is not a model call."""
    if event.context_id is None:
        return
    thread = threads.setdefault(event.context_id, _Thread())
    thread.conversation = advance(thread.conversation, event)


class EventEncoder:
    """Turns events into JSON lines (one writer's state: the contexts seen so far)."""

    def __init__(self, media_dir: Path) -> None:
        self.media_dir = media_dir
        self._threads: dict[str, _Thread] = {}
        # Inline bytes already stored, by the bytes object: (bytes, file, hash).
        self._stored: dict[int, tuple[bytes, str, str]] = {}

    def encode(self, event: Event) -> str:
        """The JSON line of ``event`` (no newline)."""
        if isinstance(event, ModelCallEvent) and event.sent is not None:
            line = self._model_call(event, event.sent)
        else:
            line = EventAdapter.dump_json(event, fallback=str).decode("utf-8")
            _follow(self._threads, event)
        if '"data":"' in line:  # cheap test first: inline media are rare
            line = self._externalize(line)
        return line

    def _model_call(self, event: ModelCallEvent, sent: CallInput) -> str:
        head = event.model_dump_json(exclude={"sent"}, fallback=str)
        thread = self._threads.get(event.context_id) if event.context_id is not None else None
        prefix = 0
        if thread is not None:
            shared = min(len(thread.conversation), len(sent.messages))
            while prefix < shared and _same(sent.messages[prefix], thread.conversation[prefix]):
                prefix += 1
        new = sent.messages[prefix:]
        known = thread.media if thread is not None else {}
        media = self._media(sent.messages, known)
        if thread is not None and _same(thread.tools, sent.tools):
            tools = '"tools_same":true'
        else:
            tools = _TOOL_TEXTS.get(
                sent.tools, lambda: f'"tools":{_TOOLS.dump_json(sent.tools).decode("utf-8")}'
            )
        body = (
            f'{{"prefix":{prefix},"messages":{_MESSAGES.dump_json(new).decode("utf-8")},{tools},'
            f'"config":{sent.config.model_dump_json(exclude_defaults=True, fallback=str)},'
            f'"media":{json.dumps(media, ensure_ascii=False, separators=(",", ":"))}}}'
        )
        if event.context_id is not None:
            self._threads[event.context_id] = _Thread(
                conversation=advance([], event), tools=sent.tools, media=known | media
            )
        return f'{head[:-1]},"sent":{body}}}'

    def _media(self, messages: list[Message], known: dict[str, str]) -> dict[str, str]:
        """Hashes of the media in ``messages`` not in ``known``, by the path the file names
        them by (inline bytes: the file they are stored in)."""
        found: dict[str, str] = {}
        for message in messages:
            for part in message.content:
                if isinstance(part, Text):
                    continue
                if part.data is not None:
                    key, digest = self._inline(part.data, part.mime_type, part.path)
                elif part.path is not None and str(part.path) not in known:
                    key, digest = str(part.path), file_hash(part.path) or ""
                else:
                    continue
                if digest and key not in known:
                    found[key] = digest
        return found

    def _inline(self, raw: bytes, mime: str | None, path: Path | str | None) -> tuple[str, str]:
        """Where inline bytes are stored (written once) and their hash."""
        cached = self._stored.get(id(raw))
        if cached is not None and cached[0] is raw:
            return cached[1], cached[2]
        digest = hashlib.sha256(raw).hexdigest()
        suffix = (mimetypes.guess_extension(mime) if mime else None) or (
            Path(path).suffix if path else ".bin"
        )
        target = self.media_dir / f"{digest[:32]}{suffix}"
        if not target.exists():
            write_atomic(target, raw, sync=False)  # never through a link planted there
        self._stored[id(raw)] = (raw, str(target), f"sha256:{digest}")
        return str(target), f"sha256:{digest}"

    def _externalize(self, line: str) -> str:
        data = json.loads(line)
        stored: dict[str, str] = {}
        self._walk(data, stored)
        if not stored:
            return line
        sent = data.get("sent")
        if data.get("kind") == "model_call" and isinstance(sent, dict):
            sent.setdefault("media", {}).update(stored)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    def _walk(self, node: Any, stored: dict[str, str]) -> None:
        if isinstance(node, list):
            for item in node:
                self._walk(item, stored)
            return
        if not isinstance(node, dict):
            return
        if node.get("type") in _MEDIA_TYPES and isinstance(node.get("data"), str):
            raw = base64.b64decode(node["data"])
            target, digest = self._inline(raw, node.get("mime_type"), node.get("path"))
            node["data"] = None
            node["path"] = target
            stored[target] = digest
            return
        for value in node.values():
            self._walk(value, stored)


class EventDecoder:
    """Turns JSON lines back into events, rebuilding each model call's full input."""

    def __init__(self) -> None:
        self._threads: dict[str, _Thread] = {}

    def decode(self, line: bytes) -> Event:
        """The event of one line; raises :class:`pydantic.ValidationError` (or ``ValueError``)
        for a line that is not one."""
        if b'"model_call"' not in line:  # only model calls are encoded
            plain = EventAdapter.validate_json(line)
            _follow(self._threads, plain)
            return plain
        raw = json.loads(line)
        sent = raw.pop("sent", None) if isinstance(raw, dict) else None
        event = EventAdapter.validate_python(raw)
        if not isinstance(event, ModelCallEvent) or not isinstance(sent, dict):
            _follow(self._threads, event)
            return event
        thread = self._threads.get(event.context_id or "")
        prefix = int(sent.get("prefix", 0))
        new = _MESSAGES.validate_python(sent.get("messages", []))
        if prefix and (thread is None or prefix > len(thread.conversation)):
            raise ValueError(f"model call {event.id} refers to {prefix} earlier messages it lacks")
        before = thread.conversation[:prefix] if thread is not None else []
        if sent.get("tools_same"):
            tools = thread.tools if thread is not None else []
        else:
            tools = _TOOLS.validate_python(sent.get("tools", []))
        media = (thread.media if thread is not None else {}) | dict(sent.get("media", {}))
        messages = [*before, *new]
        event.sent = CallInput(
            messages=messages,
            tools=tools,
            config=GenerateConfig.model_validate(sent.get("config", {})),
            media=media,
        )
        if event.context_id is not None:
            self._threads[event.context_id] = _Thread(advance([], event), tools, media)
        return event
