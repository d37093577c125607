"""``media.max_frames`` admits what a delivery may send: 512 frames are not TOO_MANY_FRAMES."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnilab.agents.delivery import Delivery
from omnilab.config import get_settings
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.prepared import jpeg_frames


def _delivery_limit() -> int:
    limits = [m.le for m in Delivery.model_fields["frames_max"].metadata if hasattr(m, "le")]
    assert limits, "Delivery.frames_max lost its upper bound"
    return int(limits[0])


def test_the_default_admits_the_largest_delivery(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMNILAB_MEDIA__MAX_FRAMES", raising=False)
    get_settings.cache_clear()
    assert get_settings().media.max_frames >= _delivery_limit() == 512


def test_jpeg_frames_takes_512_at_the_default(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMNILAB_MEDIA__MAX_FRAMES", raising=False)
    get_settings.cache_clear()
    cache = MediaCache(tmp_path / "cache", max_bytes=1 << 30)
    got = jpeg_frames(video, num=_delivery_limit(), max_edge=32, cache=cache)
    assert len(got) == 512
    # One past the limit is still refused, with the setting named.
    with pytest.raises(MediaError) as err:
        jpeg_frames(video, num=get_settings().media.max_frames + 1, max_edge=32, cache=cache)
    assert err.value.code == MediaErrorCode.TOO_MANY_FRAMES
