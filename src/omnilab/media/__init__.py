"""The media environment: probe, frames, audio, clips, images and a content-addressed cache.

Everything decodes and encodes through PyAV (bundled FFmpeg), validates each request against the
probed file first, and raises :class:`MediaError` with a stable code and a one-line message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnilab._lazy import lazy_getattr
from omnilab.media.errors import MediaError, MediaErrorCode

# Imported here, not lazily: the function shares its name with its module, and a lazy lookup
# would find the module once anything imported omnilab.media.probe.
from omnilab.media.probe import MediaInfo, MediaKind, probe

if TYPE_CHECKING:
    from omnilab.media.audio import audio_samples, audio_segment
    from omnilab.media.cache import MediaCache
    from omnilab.media.clips import clip
    from omnilab.media.image import crop, load_image, resize
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

# The rest load on first use (settings, numpy, Pillow): `omnilab media probe` needs none of them.
_LAZY = {
    "MediaCache": "omnilab.media.cache",
    "audio_samples": "omnilab.media.audio",
    "audio_segment": "omnilab.media.audio",
    "clip": "omnilab.media.clips",
    "crop": "omnilab.media.image",
    "load_image": "omnilab.media.image",
    "resize": "omnilab.media.image",
    "contact_sheet": "omnilab.media.sheet",
    "video_sheet": "omnilab.media.sheet",
    "Frame": "omnilab.media.video",
    "frames": "omnilab.media.video",
    "frames_at": "omnilab.media.video",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
