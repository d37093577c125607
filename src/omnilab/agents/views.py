"""Perception modes: how the inputs reach the model in the first user message.

- ``native``: every file as a media part (the model perceives them itself);
- ``active`` (OmniAtlas): a compact view, a contact sheet per video, each image shrunk, the start
  of each audio file, plus the read_* tools to look closer;
- ``tools``: no media at all; the audio_qa / vision_qa tools perceive on the model's behalf;
- ``audio-as-tool`` / ``vision-as-tool`` (OmniGAIA Table 3): one modality native, the other only
  through its tool: images and video frames are shown but sound is left to audio_qa, or sound
  (audio files, the audio track of videos) is given but pictures are left to vision_qa;
- ``evidence``: for text-only models, a text digest of the media (transcript, audio events,
  shots, on-screen text) plus read_* tools that answer in text.

Every mode starts with the input listing (ids, kinds, durations, which file each id is) and ends
with the question, stated with its options and answer format (:mod:`omnilab.agents.question`).
Plain-text inputs are given as text in every mode: every model reads text. No host path ever
reaches a prompt: media are named by input id (and time range) only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from omnilab import _wsread
from omnilab.agents.base import AgentConfigError, AgentTask
from omnilab.agents.delivery import Delivery, video_frames_parts, video_part
from omnilab.agents.question import question_text
from omnilab.agents.templates import render
from omnilab.agents.view_files import frame_parts, save_view
from omnilab.content import Audio, Content, Image, MediaContent, Text, Video
from omnilab.errors import OmnilabError
from omnilab.inputs import FileKind, InputFile, InputSet
from omnilab.models.capabilities import Capabilities

__all__ = [
    "MODES",
    "Delivery",
    "Mode",
    "accepts",
    "check_mode",
    "default_mode",
    "evidence_part",
    "first_message_parts",
    "media_kinds",
    "text_part",
]

Mode = Literal["native", "active", "tools", "audio-as-tool", "vision-as-tool", "evidence"]
MODES: tuple[Mode, ...] = (
    "native",
    "active",
    "tools",
    "audio-as-tool",
    "vision-as-tool",
    "evidence",
)
# What each single-modality mode shows natively, and which capability that needs.
_SPLIT: dict[str, tuple[frozenset[FileKind], str]] = {
    "audio-as-tool": (frozenset({"image", "video"}), "image"),
    "vision-as-tool": (frozenset({"audio", "video"}), "audio"),
}

# The contact sheet of active mode: enough to decide where to look, small enough for any context.
# (How many frames, the image edge and the audio cut are Delivery options.)
_SHEET_TILE = 256
# The `video` start view samples at the reference's rate unless frames_fps says otherwise.
_START_FPS = 2.0
# Text inputs beyond this many characters are cut (the model can ask code_executor for more).
_TEXT_CHARS = 20_000
_MEDIA: frozenset[FileKind] = frozenset({"video", "audio", "image"})


def media_kinds(inputs: InputSet) -> set[FileKind]:
    """The media kinds (video, audio, image) among ``inputs``."""
    return {f.kind for f in inputs if f.kind in _MEDIA}


def accepts(caps: Capabilities, part: Content) -> bool:
    """Whether a model with ``caps`` can be sent ``part`` (else the adapter would refuse it)."""
    if isinstance(part, Text):
        return True
    if isinstance(part, Image):
        return caps.image
    if isinstance(part, Audio):
        return caps.audio
    if isinstance(part, Video):
        return caps.video or caps.image
    return caps.documents


def _native_ok(caps: Capabilities, kind: FileKind) -> bool:
    if kind == "video":
        # Frames alone would drop the sound track: only a model that hears it sees the whole video.
        return caps.video or (caps.image and caps.audio)
    if kind == "audio":
        return caps.audio
    if kind == "image":
        return caps.image
    return True


def default_mode(inputs: InputSet, caps: Capabilities) -> Mode:
    """``native`` when the model takes every input as it is, ``active`` when it at least sees
    images, else ``evidence`` (text-only models)."""
    if all(_native_ok(caps, k) for k in media_kinds(inputs)):
        return "native"
    return "active" if caps.image else "evidence"


def check_mode(mode: Mode, inputs: InputSet, caps: Capabilities, model: str) -> None:
    """Raise :class:`AgentConfigError` when ``mode`` cannot work with this model and these inputs."""
    if mode in _SPLIT:
        shown, flag = _SPLIT[mode]
        if media_kinds(inputs) & shown and not getattr(caps, flag):
            raise AgentConfigError(
                f"mode {mode} shows {flag} natively, but {model} does not take {flag} "
                f"(flags: {caps.describe()}); use --mode tools or evidence, or set its "
                "capability flags in models.capabilities"
            )
    if mode == "native":
        refused = sorted(k for k in media_kinds(inputs) if not _native_ok(caps, k))
        if refused:
            raise AgentConfigError(
                f"mode native sends every file to the model, but {model} does not take "
                f"{' or '.join(refused)} natively (flags: {caps.describe()}); use --mode active, "
                "tools or evidence, or set its capability flags in models.capabilities"
            )


def text_part(f: InputFile) -> Text:
    """A text input inlined as text (cut past a length), labelled with its id and file name."""
    try:
        raw = _wsread.read_bytes(f.path).decode("utf-8", errors="replace")
    except OSError as e:
        return Text(text=f"[{f.id}: cannot read {f.path.name}: {e.strerror or e}]")
    if len(raw) > _TEXT_CHARS:
        raw = raw[:_TEXT_CHARS] + f"\n[... {len(raw) - _TEXT_CHARS} more characters cut ...]"
    return Text(text=f"[{f.id}: {f.path.name}]\n{raw}")


def _native(
    f: InputFile, inputs: InputSet, caps: Capabilities, views: Path, d: Delivery
) -> list[Content]:
    if f.kind == "video" and caps.video and d.soundtrack:
        return video_part(f, inputs, caps, d.soundtrack_max_s)
    if f.kind == "video" and not caps.video and caps.image and d.frames_fps is not None:
        return _or_note(
            f,
            lambda: video_frames_parts(
                f,
                inputs,
                caps,
                views,
                fps=d.frames_fps or _START_FPS,
                max_frames=d.frames_max,
                max_edge=d.frames_max_edge,
                audio_s=d.soundtrack_max_s,
                keyframes=d.frames_sampling == "keyframe",
            ),
        )
    part: MediaContent = f.content()
    if accepts(caps, part):
        return [Text(text=f"[{f.id}]"), part]
    return [Text(text=f"[{f.id}: {f.kind} not shown: this model does not take {f.kind}]")]


def _or_note(f: InputFile, make: Callable[[], list[Content]]) -> list[Content]:
    """``make()``, or a note naming the media error when the file cannot be read."""
    from omnilab.media.errors import MediaError

    try:
        return make()
    except MediaError as e:
        return [Text(text=f"[{f.id}: no preview ({e.code}: {f.redact(e.message)})]")]


def _compact(
    f: InputFile, inputs: InputSet, caps: Capabilities, views: Path, d: Delivery
) -> list[Content]:
    """The active-mode start view of one media file (files it makes go into ``views``)."""
    return _or_note(f, lambda: _start_view(f, inputs, caps, views, d))


def _start_view(
    f: InputFile, inputs: InputSet, caps: Capabilities, views: Path, d: Delivery
) -> list[Content]:
    # Imported here: the media stack (PyAV, Pillow) is needed only when a view is made.
    from omnilab.media.image import load_image, resize
    from omnilab.media.sheet import video_sheet

    if f.kind == "video" and d.start_view == "video" and caps.video:
        return video_part(f, inputs, caps, d.start_audio_s)
    if f.kind == "video" and d.start_view == "video" and caps.image:
        fps = d.frames_fps or _START_FPS
        return video_frames_parts(
            f,
            inputs,
            caps,
            views,
            fps=fps,
            max_frames=d.frames_max,
            max_edge=d.frames_max_edge,
            audio_s=d.start_audio_s,
            keyframes=d.frames_sampling == "keyframe",
        )
    if f.kind == "video" and caps.image:
        sheet = video_sheet(f.path, d.sheet_frames, tile_edge=_SHEET_TILE)
        out = save_view(sheet, views, f"{f.id}.sheet.jpg")
        note = f"[{f.id}: contact sheet of {d.sheet_frames} frames; use read_video for detail]"
        return [Text(text=note), Image(path=out)]
    if f.kind == "image" and caps.image:
        if d.start_image_edge == "full":
            return [Text(text=f"[{f.id}]"), Image(path=f.path)]
        out = save_view(resize(load_image(f.path), d.start_image_edge), views, f"{f.id}.jpg")
        note = f"[{f.id}: shrunk to at most {d.start_image_edge} px; use read_image for detail]"
        return [Text(text=note), Image(path=out)]
    if f.kind == "audio" and caps.audio:
        duration = f.probe().duration or 0.0
        if duration <= d.start_audio_s:
            return [Text(text=f"[{f.id}]"), Audio(path=f.path)]
        note = f"[{f.id}: first {d.start_audio_s:g} s; use read_audio for the rest]"
        return [Text(text=note), Audio(path=f.path, start=0.0, end=d.start_audio_s)]
    return []


def _one_modality(f: InputFile, mode: Mode, views: Path) -> list[Content]:
    """The single-modality view of one file: pictures only, or sound only."""
    from omnilab.config import get_settings
    from omnilab.media.errors import MediaError
    from omnilab.media.prepared import jpeg_frames

    if mode == "vision-as-tool":
        if f.kind == "image":
            return [Text(text=f"[{f.id}: image not shown; ask vision_qa about it]")]
        what = (
            "the sound track of the video; ask vision_qa about its pictures"
            if f.kind == "video"
            else "audio"
        )
        # An Audio part over a video file is sent as that video's audio track.
        return [Text(text=f"[{f.id}: {what}]"), Audio(path=f.path)]
    if f.kind == "audio":
        return [Text(text=f"[{f.id}: audio not played; ask audio_qa about it]")]
    if f.kind == "image":
        return [Text(text=f"[{f.id}]"), f.content()]
    settings = get_settings().perception_tools
    try:
        duration = f.probe().duration or 0.0
        n = max(1, min(settings.video_max_frames, round(duration * settings.video_fps)))
        shots = jpeg_frames(f.path, 0.0, None, num=n, max_edge=settings.frame_max_edge)
    except MediaError as e:
        return [Text(text=f"[{f.id}: no frames ({e.code}: {f.redact(e.message)})]")]
    head = f"[{f.id}: {len(shots)} frames without sound; ask audio_qa about what is heard]"
    return frame_parts(f.id, shots, views, head)


async def evidence_part(inputs: InputSet) -> Text:
    """The media of ``inputs`` as one text digest (transcript, audio events, OCR, shots) for a
    model that takes text only; a digest that fails says why instead."""
    from omnilab.perception import digest

    media = [f.path for f in inputs if f.kind in _MEDIA]
    if not media:
        return Text(text="(no media inputs)")
    try:
        # Minutes of decoding and recognition for long files: keep the event loop free.
        evidence = await asyncio.to_thread(digest, media)
    except OmnilabError as e:
        message = str(e)
        for f in inputs:
            message = f.redact(message)
        return Text(text=f"(the media could not be analysed: {message})")
    # The contact sheets are files in the media cache: their paths mean nothing to the model
    # and would show it the host's folders.
    evidence = evidence.model_copy(
        update={"files": [f.model_copy(update={"sheet": None}) for f in evidence.files]}
    )
    markdown = evidence.to_markdown()
    for f in inputs:  # the model knows files by id: name them so in the digest
        markdown = markdown.replace(f"## {f.path.name}\n", f"## {f.id} ({f.path.name})\n", 1)
    return Text(text=render("evidence", digest=markdown.strip()))


async def first_message_parts(
    task: AgentTask | str,
    inputs: InputSet,
    mode: Mode,
    caps: Capabilities,
    workspace: Path,
    delivery: Delivery | None = None,
) -> list[Content]:
    """The content of the first user message for ``mode`` (views are written to workspace);
    ``delivery`` says how media are sent (default: omnilab's own, see :class:`Delivery`).

    Given the task, the question is stated with its options and answer format
    (:func:`~omnilab.agents.question.question_text`); a bare string is sent as it is.
    """
    d = delivery or Delivery()
    views = workspace / "views"
    parts: list[Content] = [Text(text=inputs.listing())]
    parts += [text_part(f) for f in inputs if f.kind == "text"]
    if mode == "native":
        for f in inputs:
            if f.kind != "text":
                # Soundtracks and frames are decoded here: keep the event loop free.
                parts += await asyncio.to_thread(_native, f, inputs, caps, views, d)
    elif mode == "active":
        for f in inputs:
            if f.kind in _MEDIA:
                parts += await asyncio.to_thread(_compact, f, inputs, caps, views, d)
    elif mode == "evidence":
        parts.append(await evidence_part(inputs))
    elif mode in _SPLIT:
        for f in inputs:
            if f.kind in _MEDIA:
                parts += await asyncio.to_thread(_one_modality, f, mode, views)
    parts.append(Text(text=question_text(task)))
    return parts
