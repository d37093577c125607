"""Content parts and messages as HTML: text, thumbnails that enlarge, audio and video players."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omnilab.content import Audio, Content, Document, Image, Text, Video
from omnilab.models.types import Message, ToolCall
from omnilab.report.html import esc, json_block
from omnilab.report.media import MediaCopier

__all__ = ["Renderer", "time_range"]

_TEXT_LIMIT = 30_000  # characters of one text part shown; the rest is summarised
_CAPTION = 80  # a text this short right before an image is its caption (a frame's time)


def time_range(start: float | None, end: float | None) -> str:
    """``12.0–15.5 s``, ``from 3 s``, or empty."""
    if start is None and end is None:
        return ""
    if end is None:
        return f"from {start or 0:g} s"
    return f"{start or 0:g}–{end:g} s"


@dataclass
class Renderer:
    """Renders parts of one page: ``root`` leads back to the report folder, ``search`` lists
    the run's folders where saved media are looked up."""

    copier: MediaCopier
    root: str = ""
    search: tuple[Path, ...] = ()

    def parts(self, parts: Sequence[Content], *, captions: bool = False) -> str:
        """Parts in order; consecutive images share one strip of thumbnails. ``captions``
        (tool results): a short text just before an image is its caption (a frame's time)."""
        out: list[str] = []
        strip: list[str] = []
        for n, part in enumerate(parts):
            if isinstance(part, Image):
                before = parts[n - 1] if n else None
                caption = (
                    before.text if isinstance(before, Text) and _is_caption(parts, n - 1) else ""
                )
                strip.append(self.image(part, caption=caption))
                continue
            if captions and _is_caption(parts, n):
                continue
            if strip:
                out.append(f'<div class="frames">{"".join(strip)}</div>')
                strip = []
            out.append(self.part(part))
        if strip:
            out.append(f'<div class="frames">{"".join(strip)}</div>')
        return "".join(out)

    def part(self, part: Content) -> str:
        """One part."""
        if isinstance(part, Text):
            return text_block(part.text)
        if isinstance(part, Image):
            return f'<div class="frames">{self.image(part)}</div>'
        if isinstance(part, Audio | Video):
            return self.player(part)
        return self.document(part)

    def image(self, part: Image, *, caption: str = "") -> str:
        """A thumbnail that opens the larger copy (click to enlarge), with ``caption`` (a
        timestamp) above its file name."""
        ref = self.copier.ref(part, search=self.search)
        caption = (f"<b>{esc(caption)}</b><br>" if caption else "") + esc(ref.name)
        caption += f" box {esc(list(part.box))}" if part.box else ""
        if ref.src is None:
            return _placeholder("image", ref.name, ref.note)
        return (
            f'<figure class="frame"><a class="zoom" href="{self.root}{esc(ref.src)}">'
            f'<img src="{self.root}{esc(ref.thumb or ref.src)}" alt="{esc(ref.name)}" '
            f'loading="lazy"></a><figcaption>{caption}</figcaption></figure>'
        )

    def player(self, part: Audio | Video) -> str:
        """An ``<audio>`` or ``<video>`` element over the copy, limited to the part's range."""
        ref = self.copier.ref(part, search=self.search)
        span = time_range(part.start, part.end)
        label = esc(ref.name) + (f" ({esc(span)})" if span else "")
        if ref.src is None:
            return _placeholder(part.type, ref.name, ref.note)
        fragment = ""
        if part.start is not None or part.end is not None:
            end = "" if part.end is None else f",{part.end:g}"
            fragment = f"#t={part.start or 0:g}{end}"
        tag = part.type
        return (
            f'<div class="media {tag}"><{tag} controls preload="metadata" '
            f'src="{self.root}{esc(ref.src)}{fragment}"></{tag}>'
            f'<div class="caption">{label}</div></div>'
        )

    def document(self, part: Document) -> str:
        """A document: a link to its copy."""
        ref = self.copier.ref(part, search=self.search)
        if ref.src is None:
            return _placeholder("document", ref.name, ref.note)
        return f'<div class="doc"><a href="{self.root}{esc(ref.src)}">{esc(ref.name)}</a></div>'

    def message(self, message: Message, *, extra: str = "") -> str:
        """A message as a bubble: its role, parts, and tool calls."""
        calls = "".join(tool_call(c) for c in message.tool_calls)
        ref = (
            f' <span class="muted">→ call {esc(message.tool_call_id)}</span>'
            if message.tool_call_id
            else ""
        )
        return (
            f'<div class="msg {esc(message.role)}"><div class="who">{esc(message.role)}{ref}</div>'
            f"{self.parts(message.content)}{calls}{extra}</div>"
        )


def _is_caption(parts: Sequence[Content], n: int) -> bool:
    """Whether part ``n`` is a short text right before an image (shown as its caption)."""
    part = parts[n] if 0 <= n < len(parts) else None
    following = parts[n + 1] if n + 1 < len(parts) else None
    return isinstance(part, Text) and isinstance(following, Image) and len(part.text) <= _CAPTION


def text_block(text: str) -> str:
    """Text as preformatted, escaped, cut past a limit."""
    if len(text) > _TEXT_LIMIT:
        text = text[:_TEXT_LIMIT] + f"\n... ({len(text) - _TEXT_LIMIT} more characters)"
    return f'<div class="text">{esc(text)}</div>'


def tool_call(call: ToolCall) -> str:
    """A tool call with its arguments."""
    problem = f' <span class="bad">{esc(call.parse_error)}</span>' if call.parse_error else ""
    recovered = ' <span class="muted">(recovered from text)</span>' if call.recovered else ""
    return (
        f'<div class="call"><span class="tool">{esc(call.name)}</span> '
        f'<span class="muted">{esc(call.id)}</span>{recovered}{problem}'
        f"{json_block(call.arguments)}</div>"
    )


def _placeholder(kind: str, name: str, note: str) -> str:
    return (
        f'<div class="placeholder">[{esc(kind)}: {esc(name)}'
        f"{' — ' + esc(note) if note else ''}]</div>"
    )
