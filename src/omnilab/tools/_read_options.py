"""The options of the read_* tools, apart from the tools so that agents can name them without
importing the media stack."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ReadOptions"]


class ReadOptions(BaseModel):
    """Options of ``read_video``, ``read_audio`` and ``read_image`` for one run (the
    ``read_tools`` option of the ``tir`` agent). Defaults are omnilab's own; the OmniGAIA
    presets set the authors' behaviour."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    clamp_end: bool = False
    """A ``t_end`` past the file's end reads to the end (the reference does), instead of an
    out-of-range error the model can act on."""
    audio_max_s: float | None = Field(default=None, gt=0)
    """``read_audio`` returns at most this many seconds from ``t_start`` and says so
    (reference: 300); ``None``: the whole range asked."""
    video_fps: float | None = Field(default=None, gt=0, le=30)
    """Frames per second ``read_video`` returns to a model without video input (reference:
    2); ``None``: ``perception_tools.video_fps``."""
    video_max_frames: int | None = Field(default=None, ge=1, le=512)
    """Most frames per ``read_video`` call (reference: 128); ``None``:
    ``perception_tools.video_max_frames``."""
    video_max_edge: int | None = Field(default=None, ge=16)
    """Longest edge of ``read_video`` frames (reference: 256); ``None``: the model's
    ``max_image_edge``, else ``perception_tools.frame_max_edge``."""
    read_audio_for: Literal["audio-and-video", "audio"] = "audio-and-video"
    """Which inputs ``read_audio`` serves and is offered for: audio files and videos' sound
    tracks, or audio files only (the reference)."""
    read_image_for: Literal["images", "always"] = "images"
    """Offer ``read_image`` when the task has images, or always (the reference)."""
