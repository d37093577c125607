"""The media environment: probe, frames, audio, clips, images and a content-addressed cache.

Everything decodes and encodes through PyAV (bundled FFmpeg), validates each request against the
probed file first, and raises :class:`MediaError` with a stable code and a one-line message.
"""

from __future__ import annotations

from omnilab.media.audio import audio_samples, audio_segment
from omnilab.media.cache import MediaCache
from omnilab.media.clips import clip
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.image import crop, load_image, resize
from omnilab.media.probe import MediaInfo, MediaKind, probe
from omnilab.media.sheet import contact_sheet, video_sheet
from omnilab.media.video import Frame, frames, frames_at

__all__ = [
    "Frame",
    "MediaCache",
    "MediaError",
    "MediaErrorCode",
    "MediaInfo",
    "MediaKind",
    "audio_samples",
    "audio_segment",
    "clip",
    "contact_sheet",
    "crop",
    "frames",
    "frames_at",
    "load_image",
    "probe",
    "resize",
    "video_sheet",
]
