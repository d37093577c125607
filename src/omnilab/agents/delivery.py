"""How media reach the model in the first message: the options of the ``tir`` agent's views.

Defaults are omnilab's own (a video-capable model gets the file as it is, an image+audio model
gets the transport's evenly spread frames, ``active`` mode starts from a contact sheet); the
reproduction presets set the OmniGAIA authors' behaviour (``bench/protocols/*.toml``):

- ``soundtrack``: a video-capable model also gets the video's sound as its own audio part (the
  task's audio file of the same name when there is one, else the track extracted from the
  video, up to ``soundtrack_max_s``);
- ``frames_fps`` / ``frames_max`` / ``frames_max_edge``: a model that takes images and audio
  but not video gets the video as frames at that rate (at most that many, that size), each
  after its time, plus the soundtrack; ``frames_sampling`` picks exact frames (the presets,
  as the reference samples) or the keyframe at or before each time (faster, up to a GOP early);
- ``start_view``: what ``active`` mode shows first: ``sheet`` (one contact sheet per video,
  no sound, images shrunk to ``start_image_edge``, audio cut at ``start_audio_s``) or
  ``video`` (the whole video as above, with its sound up to ``start_audio_s``, full images).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnilab.agents.view_files import frame_parts
from omnilab.content import Audio, Content, Text, Video
from omnilab.inputs import InputFile, InputSet
from omnilab.models.capabilities import Capabilities

__all__ = ["Delivery", "soundtrack_parts", "video_frames_parts", "video_part"]


class Delivery(BaseModel):
    """Media delivery options of the first message (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    soundtrack: bool = False
    """Give a video-capable model each video's soundtrack as its own audio part (the
    OmniGAIA reference does; the transport sends the video file as it is)."""
    soundtrack_max_s: float = Field(default=1800.0, gt=0)
    """Longest soundtrack extracted from a video, in seconds (reference: 30 minutes)."""
    frames_fps: float | None = Field(default=None, gt=0, le=30)
    """Image+audio models without video input: the video as frames at this rate plus its
    soundtrack (reference: 2); ``None`` leaves it to the transport (``video_frames``
    capability, 8 evenly spread frames)."""
    frames_max: int = Field(default=128, ge=1, le=512)
    """Most frames per video when ``frames_fps`` (or the ``video`` start view) samples it."""
    frames_max_edge: int | None = Field(default=None, ge=16)
    """Longest edge of those frames in pixels (reference: 512); ``None``: the model's
    ``max_image_edge``, else the source size."""
    frames_sampling: Literal["exact", "keyframe"] = "exact"
    """How those frames are sampled: ``exact``, the frame shown at each evenly spread time
    (the reference's uniform sampling; the presets use it), or ``keyframe``, the keyframe at or
    before each time: its time is up to one keyframe interval (GOP) earlier than asked (than
    the last frame, past the pictures' end) and neighbouring times may share a frame, for a
    fraction of the decoding (docs/media.md)."""
    start_view: Literal["sheet", "video"] = "sheet"
    """``active`` mode's starting view: ``sheet`` (a contact sheet per video, no sound) or
    ``video`` (the whole video with its sound, as a video part or as frames)."""
    sheet_frames: int = Field(default=16, ge=1, le=64)
    """Frames on a ``sheet`` start view's contact sheet."""
    start_image_edge: Annotated[int, Field(ge=16)] | Literal["full"] = 768
    """Images in ``active`` mode's start view are shrunk to this edge, or sent at ``full``
    size (the reference)."""
    start_audio_s: float = Field(default=300.0, gt=0)
    """Audio in ``active`` mode's start view is cut here, in seconds (reference: 15 minutes;
    with ``start_view = "video"`` it also caps each video's soundtrack)."""


def _matching_audio(f: InputFile, inputs: InputSet) -> InputFile | None:
    """The task's audio file that is this video's sound (same name, other extension)."""
    return next(
        (a for a in inputs if a.kind == "audio" and a.path.stem == f.path.stem),
        None,
    )


def soundtrack_parts(
    f: InputFile, inputs: InputSet, caps: Capabilities, max_s: float
) -> list[Content]:
    """The soundtrack of video ``f`` as its own audio part (nothing when the model takes no
    audio or the video has no sound). A task's audio file of the same name is that sound:
    it is sent in its own right, so it is only named here."""
    if not caps.audio:
        return []
    twin = _matching_audio(f, inputs)
    if twin is not None:
        return [Text(text=f"[{f.id} soundtrack: {twin.id}]")]
    info = f.probe()
    if not info.has_audio:
        return [Text(text=f"[{f.id}: no audio track]")]
    end = min(info.duration or max_s, max_s)
    # An Audio part over a video file is sent as that range of the video's audio track.
    return [
        Text(text=f"[{f.id} soundtrack, 0 to {end:g} s]"),
        Audio(path=f.path, start=0.0, end=end),
    ]


def video_frames_parts(
    f: InputFile,
    inputs: InputSet,
    caps: Capabilities,
    views: Path,
    *,
    fps: float,
    max_frames: int,
    max_edge: int | None,
    audio_s: float,
    keyframes: bool = False,
) -> list[Content]:
    """Video ``f`` as frames at ``fps`` (at most ``max_frames``, ``max_edge`` pixels), each
    after its time, then its soundtrack (up to ``audio_s``) when the model takes audio.
    ``keyframes`` samples the keyframe at or before each time instead of the exact frame."""
    from omnilab.media.prepared import jpeg_frames

    duration = f.probe().duration or 0.0
    n = max(1, min(max_frames, round(duration * fps)))
    edge = max_edge or caps.max_image_edge
    # Decoded and encoded once per video content and sampling (the media cache): later turns,
    # samples, tasks and runs that show the same video reuse the files.
    shots = jpeg_frames(f.path, 0.0, None, num=n, max_edge=edge, keyframes_only=keyframes)
    size = f" at most {edge} px," if edge else ""
    head = f"[{f.id}: {len(shots)} frames ({fps:g} fps,{size} each after its time)]"
    return frame_parts(f.id, shots, views, head) + soundtrack_parts(f, inputs, caps, audio_s)


def video_part(f: InputFile, inputs: InputSet, caps: Capabilities, audio_s: float) -> list[Content]:
    """Video ``f`` as a video part, then its soundtrack (up to ``audio_s``)."""
    return [Text(text=f"[{f.id}]"), Video(path=f.path), *soundtrack_parts(f, inputs, caps, audio_s)]
