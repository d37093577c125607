"""The media environment: probe, frames, audio, clips, images and a content-addressed cache.

Everything decodes and encodes through PyAV (bundled FFmpeg), validates each request against the
probed file first, and raises :class:`MediaError` with a stable code and a one-line message.
"""

from __future__ import annotations

from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.probe import MediaInfo, MediaKind, probe

__all__ = ["MediaCache", "MediaError", "MediaErrorCode", "MediaInfo", "MediaKind", "probe"]
