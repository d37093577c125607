"""The media environment: probe, frames, audio, clips, images and a content-addressed cache.

Everything decodes and encodes through PyAV (bundled FFmpeg), validates each request against the
probed file first, and raises :class:`MediaError` with a stable code and a one-line message.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from omnilab._lazy import lazy_getattr
from omnilab.media.errors import MediaError, MediaErrorCode

if TYPE_CHECKING:
    from omnilab.media.audio import audio_samples, audio_segment
    from omnilab.media.cache import MediaCache
    from omnilab.media.clips import clip
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

# Names load on first use (pydantic, PyAV, settings, numpy, Pillow): fetching inputs at URLs
# (omnilab.media.remote) and `omnilab media probe` need few of them.
_LAZY = {
    "MediaInfo": "omnilab.media.probe",
    "MediaKind": "omnilab.media.probe",
    "probe": "omnilab.media.probe",
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


class _Package(types.ModuleType):
    """``probe`` is both a function of this package and its submodule: the import system sets
    the submodule as the package's attribute once it is imported, which would hide the lazily
    loaded function; that one assignment is dropped (``omnilab.media.probe`` stays the function,
    as ``sys.modules["omnilab.media.probe"]`` stays the module)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "probe" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
