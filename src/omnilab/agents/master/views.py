"""What a modality agent is shown: its own inputs only, each labelled by id.

Images and audio go as they are; a video's sound track as an ``Audio`` part over the video file
(the adapters send it as that video's audio); a video natively to a model that takes video, else
as frames with their timestamps (the model's ``video_frames`` flag says how many) and no sound,
which is the audio agent's. Text files are inlined (every model reads text). A model that takes
none of its input's media (a text-only model left as the role's fallback) gets the input's
evidence digest instead (transcript, audio events, OCR, shots), as ``tir``'s evidence mode does.
No host path reaches a prompt: inputs are named by id and file name.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from omnilab.agents.master.pool import AgentInput, ModalityAgent
from omnilab.agents.view_files import frame_parts
from omnilab.agents.views import evidence_part, text_part
from omnilab.content import Audio, Content, Image, Text, Video
from omnilab.inputs import InputSet
from omnilab.models.capabilities import Capabilities

__all__ = ["agent_parts", "input_parts", "takes_input"]


def takes_input(item: AgentInput, caps: Capabilities) -> bool:
    """Whether a model with ``caps`` can be shown ``item`` as media (else: its digest)."""
    kind = "audio" if item.track_of is not None else item.file.kind
    if kind == "video":
        return caps.video or caps.image
    return kind not in ("image", "audio") or bool(getattr(caps, kind))


def _frames(item: AgentInput, count: int, views: Path) -> list[Content]:
    # Imported here: decoding is needed only when a video model lacks video input.
    from omnilab.media.errors import MediaError
    from omnilab.media.prepared import jpeg_frames

    f = item.file
    try:
        shots = jpeg_frames(f.path, 0.0, None, num=count)
    except MediaError as e:
        return [Text(text=f"[{item.id}: no frames ({e.code}: {f.redact(e.message)})]")]
    head = f"[{item.id}: video as {len(shots)} frames, each after its time in seconds]"
    return frame_parts(item.id, shots, views, head)


def input_parts(item: AgentInput, caps: Capabilities, views: Path) -> list[Content]:
    """The message parts showing one input to a model with ``caps`` (frames go into ``views``)."""
    f = item.file
    if item.track_of is not None:
        return [
            Text(text=f"[{item.id}: the sound track of video {item.track_of}]"),
            Audio(path=f.path),
        ]
    if f.kind in ("text", "document"):
        return [text_part(f)]
    if f.kind == "video" and not caps.video:
        return _frames(item, caps.video_frames, views)
    part = {"image": Image, "audio": Audio, "video": Video}[f.kind](path=f.path)
    return [Text(text=f"[{item.id}: {f.kind} {f.path.name}]"), part]


async def agent_parts(
    agent: ModalityAgent, caps: Capabilities, views: Path, only: str | None = None
) -> list[Content]:
    """Every input of ``agent`` (or the one with id ``only``) as message parts."""
    parts: list[Content] = []
    for item in agent.inputs:
        if only is not None and item.id != only:
            continue
        if not takes_input(item, caps):
            parts += [
                Text(text=f"[{item.id}: {item.file.kind} {item.file.path.name} as text evidence]"),
                await evidence_part(InputSet([item.file])),
            ]
            continue
        # Frame decoding takes a while for long videos: keep the event loop free.
        parts += await asyncio.to_thread(input_parts, item, caps, views)
    return parts
