"""``probe``: what a media file is, detected by content, not by extension."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from enum import StrEnum
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from omnilab import _wsread
from omnilab.media._open import check_file, is_text_head, open_bytes, open_input
from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s

if TYPE_CHECKING:
    # PyAV and Pillow load on the first probe: importing omnilab.media (which fetching inputs at
    # URLs does) costs neither.
    import av.container
    import av.video.stream

__all__ = ["TEXT_SUFFIXES", "MediaInfo", "MediaKind", "probe"]

TEXT_SUFFIXES = frozenset(
    {".txt", ".md", ".markdown", ".rst", ".json", ".jsonl", ".csv", ".tsv", ".srt", ".vtt"}
    | {".log", ".yaml", ".yml", ".xml", ".html", ".htm"}
)
"""Names that are text whenever their content is: FFmpeg would otherwise read a ``.txt`` as a
"tty" video (ANSI art) and ``.srt``/``.vtt`` as subtitle streams."""
# FFmpeg's catch-all demuxer for text: it renders any text file as an ANSI-art video.
_TEXT_DEMUXER = "tty"
# The names that demuxer claims (libavformat/tty.c).
_TTY_SUFFIXES = frozenset({".ans", ".art", ".asc", ".diz", ".ice", ".nfo", ".vt"})

# Keyframe-interval estimation demuxes (never decodes) at most this many video packets.
_GOP_SCAN_PACKETS = 1500
# EXIF orientations 5-8 turn the image by 90 degrees, which swaps width and height.
_EXIF_SWAPS_AXES = {5, 6, 7, 8}


class MediaKind(StrEnum):
    VIDEO = "video"
    AUDIO = "audio"
    IMAGE = "image"
    TEXT = "text"


class MediaInfo(BaseModel):
    """Probed metadata. Times are seconds from the start of the media (0 = first sample)."""

    model_config = ConfigDict(frozen=True)

    path: Path
    kind: MediaKind
    container: str
    size_bytes: int
    duration: float | None = None
    start_time: float = 0.0
    """Presentation time of the first packet in the file's own clock (subtracted from all times)."""
    has_video: bool = False
    has_audio: bool = False
    width: int | None = None
    """Display width: rotation (video) and EXIF orientation (image) already applied."""
    height: int | None = None
    rotation: int = 0
    """Degrees the decoded picture is turned to display it (multiple of 90)."""
    fps: float | None = None
    frame_count: int | None = None
    video_codec: str | None = None
    keyframe_interval: float | None = None
    """Mean seconds between keyframes seen in the first packets; ``None`` if fewer than two."""
    sample_rate: int | None = None
    channels: int | None = None
    audio_codec: str | None = None

    def summary(self) -> str:
        """One line a person or a model can read."""
        parts = [f"{self.path.name}: {self.kind.value} ({self.container})"]
        if self.width and self.height:
            parts.append(f"{self.width}x{self.height}")
        if self.duration is not None:
            parts.append(f"duration {fmt_s(self.duration)}")
        if self.fps:
            parts.append(f"{self.fps:g} fps")
        if self.kind is MediaKind.TEXT:
            parts.append(f"{self.size_bytes} bytes")
        if self.kind is MediaKind.VIDEO:
            parts.append("with audio" if self.has_audio else "no audio")
        if self.has_audio and self.sample_rate:
            parts.append(f"{self.sample_rate} Hz x{self.channels}")
        return ", ".join(parts)


def probe(path: str | Path) -> MediaInfo:
    """Inspect ``path``; raises :class:`MediaError` for anything that is not readable media.

    Text files (text content under a known text name such as ``.txt``/``.md``/``.json`` or
    without a suffix, or any text that FFmpeg would only read as ANSI art, e.g. ``.nfo``) are
    ``MediaKind.TEXT`` with no streams, never a "tty" video.

    The file is opened once (by :mod:`omnilab._wsread`'s rules: in a workspace, beneath it
    through no link) and every reader works on that descriptor: what was checked is what is
    probed, whatever the name points to a moment later.
    """
    p = check_file(path)
    # A workspace path is named as given: resolve() would follow a link planted meanwhile.
    shown = Path(os.path.abspath(p)) if _wsread.untrusted_root(p) is not None else p.resolve()  # noqa: PTH100
    with open_bytes(p) as f:
        st = os.fstat(f.fileno())
        if st.st_size == 0:
            raise MediaError(MediaErrorCode.CORRUPT, f"{p.name} is empty (0 bytes)", path=p)
        # The opened file's identity is part of the key: a rewritten or swapped file is
        # probed again.
        key = (shown, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        info = _probe_cached.get(key)
        if info is None:
            info = _probe_held(shown, f, st.st_size)
            _probe_cached.put(key, info)
    return info


class _ProbeCache:
    """The last 512 probes, by path and the opened file's identity."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._items: OrderedDict[tuple[object, ...], MediaInfo] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> MediaInfo | None:
        with self._lock:
            info = self._items.get(key)
            if info is not None:
                self._items.move_to_end(key)
            return info

    def put(self, key: tuple[object, ...], info: MediaInfo) -> None:
        with self._lock:
            self._items[key] = info
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def cache_clear(self) -> None:
        with self._lock:
            self._items.clear()


_probe_cached = _ProbeCache()


def _head(f: IO[bytes], n: int) -> bytes:
    return os.pread(f.fileno(), n, 0)


def _probe_held(path: Path, f: IO[bytes], size: int) -> MediaInfo:
    """Probe the open file ``f`` (``path`` names it in the result and in messages)."""
    suffix = path.suffix.lower()
    # FFmpeg reads the descriptor's name (no suffix), so the names its "tty" demuxer claims
    # are told here: text under such a name is text, as FFmpeg would have found.
    textual = suffix in TEXT_SUFFIXES or suffix in _TTY_SUFFIXES or not suffix
    if textual and is_text_head(_head(f, 1024)):
        return _text_info(path, size)
    image = None if _av_container(_head(f, 12)) else _probe_image(path, f, size)
    if image is not None:
        return image
    # A text file under a media or document name (notes.mp4) stays an UNSUPPORTED error that
    # says it is text: the name promised something else.
    return _probe_av(path, f, size)


def _av_container(head: bytes) -> bool:
    """Whether the file starts (``head``: its first 12 bytes) like an audio/video container
    (MP4/MOV, Matroska/WebM, Ogg, FLAC, MP3 with ID3). Pillow is then not asked: failing to
    recognise such a file makes it import every image plugin, which costs more than the whole
    probe."""
    return (
        head[4:8] == b"ftyp"
        or head.startswith((b"\x1a\x45\xdf\xa3", b"OggS", b"fLaC", b"ID3"))
        or (head.startswith(b"RIFF") and head[8:12] in (b"WAVE", b"AVI "))
    )


def _text_info(path: Path, size: int) -> MediaInfo:
    container = path.suffix.lower().lstrip(".") or "text"
    return MediaInfo(path=path, kind=MediaKind.TEXT, container=container, size_bytes=size)


def _probe_image(path: Path, f: IO[bytes], size: int) -> MediaInfo | None:
    # Pillow loads here, not with the module: probing audio and video (the soundtrack's whole
    # path) never needs it, and importing it is a tenth of a soundtrack's start-up.
    from PIL import Image, UnidentifiedImageError

    try:
        f.seek(0)
        with Image.open(f) as im:
            fmt = (im.format or "image").lower()
            if getattr(im, "n_frames", 1) > 1 and fmt == "gif":
                return None  # animated GIFs are videos to FFmpeg; let it handle them
            width, height = im.size
            orientation = int(im.getexif().get(0x0112, 1))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, MediaError):
        return None
    if orientation in _EXIF_SWAPS_AXES:
        width, height = height, width
    return MediaInfo(
        path=path, kind=MediaKind.IMAGE, container=fmt, size_bytes=size, width=width, height=height
    )


def _probe_av(path: Path, f: IO[bytes], size: int) -> MediaInfo:
    with open_input(path, held_file=f) as c:
        if c.format.name == _TEXT_DEMUXER:
            if is_text_head(_head(f, 1024)):
                return _text_info(path, size)
            raise MediaError(
                MediaErrorCode.UNSUPPORTED,
                f"{path.name} is not audio, video, an image or text",
                path=path,
            )
        # A stream without a decoder in this FFmpeg (an SVG's, say) has no codec context: it is
        # not one we can read, and reading its size would fail.
        vstreams = [
            s for s in c.streams.video if not _is_cover_art(s) and s.codec_context is not None
        ]
        astreams = [s for s in c.streams.audio if s.codec_context is not None]
        if not vstreams and not astreams:
            raise MediaError(
                MediaErrorCode.UNSUPPORTED,
                f"{path.name} has no audio or video stream that can be decoded",
                path=path,
            )
        start = _start_time(c)
        duration = _duration(c, start)
        info: dict[str, object] = {
            "path": path,
            "kind": MediaKind.VIDEO if vstreams else MediaKind.AUDIO,
            "container": _container_name(c.format.name, path),
            "size_bytes": size,
            "duration": duration,
            "start_time": start,
            "has_video": bool(vstreams),
            "has_audio": bool(astreams),
        }
        if astreams:
            a = astreams[0]
            info.update(
                sample_rate=a.codec_context.sample_rate or None,
                channels=a.codec_context.channels or None,
                audio_codec=a.codec_context.name,
            )
        if vstreams:
            info.update(_video_fields(c, vstreams[0], duration))
    return MediaInfo.model_validate(info)


def _container_name(format_names: str, path: Path) -> str:
    # FFmpeg names a family ("mov,mp4,m4a,..."): the extension picks the member, the content the family.
    names = format_names.split(",")
    ext = path.suffix.lower().lstrip(".")
    return ext if ext in names else names[0]


def _is_cover_art(stream: av.video.stream.VideoStream) -> bool:
    import av.stream

    return bool(stream.disposition & av.stream.Disposition.attached_pic)


def _start_time(c: av.container.InputContainer) -> float:
    import av

    # PyAV types start_time as int, but it is None when the container does not know it.
    start: int | None = c.start_time
    return max(0.0, start / av.time_base) if start else 0.0


def _duration(c: av.container.InputContainer, start: float) -> float | None:
    import av

    if c.duration is not None and c.duration > 0:
        return c.duration / av.time_base
    # Some muxers (raw streams, some WebM) leave the header blank: demux packets to find the end.
    end = 0.0
    for packet in c.demux():
        if packet.pts is None or packet.time_base is None:
            continue
        t = float((packet.pts + (packet.duration or 0)) * packet.time_base)
        end = max(end, t)
    c.seek(0)
    return end - start if end > 0 else None


def _video_fields(
    c: av.container.InputContainer, vs: av.video.stream.VideoStream, duration: float | None
) -> dict[str, object]:
    rate = vs.average_rate or vs.guessed_rate or vs.base_rate
    fps = float(rate) if rate else None
    frame_count = vs.frames or (round(duration * fps) if duration and fps else None)
    width, height = vs.codec_context.width, vs.codec_context.height
    rotation = 0
    # The display matrix is carried on decoded frames; decoding one also proves the stream is sound.
    for frame in c.decode(vs):
        rotation = int(frame.rotation) % 360
        width, height = frame.width, frame.height
        break
    else:
        raise MediaError(
            MediaErrorCode.CORRUPT,
            f"{c.name.rsplit('/', 1)[-1]} has a video stream but no decodable frame",
        )
    if rotation in (90, 270):
        width, height = height, width
    c.seek(0)
    return {
        "width": width,
        "height": height,
        "rotation": rotation,
        "fps": fps,
        "frame_count": frame_count,
        "video_codec": vs.codec_context.name,
        "keyframe_interval": _keyframe_interval(c, vs),
    }


def _keyframe_interval(
    c: av.container.InputContainer, vs: av.video.stream.VideoStream
) -> float | None:
    times: list[float] = []
    for n, packet in enumerate(c.demux(vs)):
        if n >= _GOP_SCAN_PACKETS:
            break
        if packet.is_keyframe and packet.pts is not None and packet.time_base is not None:
            times.append(float(packet.pts * packet.time_base))
    c.seek(0)
    if len(times) < 2:
        return None
    times.sort()
    return (times[-1] - times[0]) / (len(times) - 1)
