"""The OmniAgent environment (B.2-B.4) over one video: checks an action against the video's
META and returns what it asked for, in the form the model can take.

- ``get_frames(start, end, num)``: ``num`` frames at evenly spaced times over ``[start, end]``
  (both ends included), each the exact frame shown at that time (:func:`omnilab.media.frames`),
  as JPEG at quality 90, each after its exact presentation time;
- ``get_audio(start, end)``: 16 kHz mono PCM16 WAV (:func:`omnilab.media.audio_segment`);
- ``get_clip(start, end)``: an H.264 + AAC MP4 of the range with its sound
  (:func:`omnilab.media.clip`).

Under ``rules="release"`` the labels are the release's (``Frames 10.00s-12.00s (num=5).``, each
frame after ``Frame 10.00s:``), and each extracted file is probed as the release's ffprobe check
does (an audio or clip more than 5 s off the asked length or shorter than 0.1 s, a clip without
its sound: a media error, which ends such a run). A clip that fails to encode at ``clip_preset`` is encoded again
at ``ultrafast`` (B.2's fallback, the release's ``_get_clip``).

A model without a modality gets a stand-in (:class:`Conversions`): frames become the OCR text
of each frame, plus a description by the ``perception`` role model when the run has one; audio
becomes the timed ASR transcript and sound events of the range; a clip becomes frames at
``clip_fps`` plus its audio (each converted again if need be). Derived files live in the media
cache, so a repeated request (another run, a rerun of an evaluation) costs almost nothing.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from omnilab.agents.ota import release
from omnilab.agents.ota.memory import Percept, clock, label
from omnilab.agents.ota.options import OtaOptions
from omnilab.agents.ota.protocol import Action, OtaError
from omnilab.content import Audio, Content, Image, Text, Video
from omnilab.inputs import InputFile
from omnilab.media.errors import MediaError, MediaErrorCode
from omnilab.media.probe import MediaInfo
from omnilab.models.capabilities import Capabilities

__all__ = ["Conversions", "Describe", "OtaEnv", "media_error"]

Describe = Callable[[Sequence[tuple[float, Path]]], Awaitable[str]]
"""Asks the perception role model about frames ``(time, jpeg)``; returns its description."""

_JPEG_QUALITY = 90
# video_env.py: a probed audio or clip more than dur_tol * 5 (1 s * 5) off the asked length fails.
_RELEASE_LENGTH_TOLERANCE = 5.0
_RELEASE_MIN_LENGTH = 0.1  # its min_audio_len: a shorter extracted file fails too
# Bump when what the frame manifest holds changes, so old cache entries are not read.
_CACHE_VERSION = 1


@dataclass(frozen=True)
class Conversions:
    """How each kind of medium reaches the model (recorded in the run's config)."""

    frames: str
    audio: str
    clip: str

    @classmethod
    def for_model(cls, caps: Capabilities, *, describer: bool) -> Conversions:
        """What a model with ``caps`` gets (``describer``: a perception role model is set)."""
        frames = "images" if caps.image else "ocr+perception" if describer else "ocr"
        audio = "audio" if caps.audio else "asr+events"
        clip = "video" if caps.video else f"frames as {frames} + audio as {audio}"
        return cls(frames=frames, audio=audio, clip=clip)

    def native(self) -> bool:
        """Whether every medium goes as it is."""
        return (self.frames, self.audio, self.clip) == ("images", "audio", "video")

    def summary(self) -> str:
        """One line for the run header: ``native`` or what is converted."""
        if self.native():
            return "native"
        return f"frames: {self.frames}; audio: {self.audio}; clip: {self.clip}"


class OtaEnv:
    """The environment of one run over ``source`` (see the module docstring)."""

    def __init__(
        self,
        source: InputFile,
        info: MediaInfo,
        caps: Capabilities,
        options: OtaOptions,
        *,
        describe: Describe | None = None,
    ) -> None:
        self.source = source
        self.info = info
        self.caps = caps
        self.options = options
        self.describe = describe
        self.conversions = Conversions.for_model(caps, describer=describe is not None)
        self.duration = float(info.duration or 0.0)
        self.has_audio = bool(info.has_audio)
        self.has_video = bool(info.has_video)
        self.release = options.rules == "release"

    def meta(self) -> dict[str, object]:
        """The Video META of the first message: duration, fps, has_audio."""
        fps = round(self.info.fps, 2) if self.info.fps else None
        return {"duration": round(self.duration, 2), "fps": fps, "has_audio": self.has_audio}

    # -- checks ---------------------------------------------------------------------------

    def check(self, action: Action) -> tuple[Action, OtaError | None]:
        """``action`` with an end just past the duration read as the end, or the error the
        model gets instead (codes of :data:`~omnilab.agents.ota.protocol.ERROR_CODES`)."""
        o = self.options
        kind = action.type
        if kind in ("get_frames", "get_clip") and not self.has_video:
            return action, OtaError(
                "NO_VIDEO", f"{kind}: this input has no pictures; use get_audio"
            )
        if kind == "get_audio" and not self.has_audio:
            return action, OtaError(
                "NO_AUDIO",
                "get_audio: has_audio is false (the video has no sound); use get_frames or get_clip",
            )
        start, end = action.start, action.end
        whole = f"the video runs from 0.00s to {clock(self.duration)}"
        if start < 0 or start > self.duration:
            return action, OtaError("TS_OOB", f"start {clock(start)} is out of bounds; {whole}")
        if end > self.duration + o.end_tolerance or end < 0:
            return action, OtaError("TS_OOB", f"end {clock(end)} is out of bounds; {whole}")
        end = min(end, self.duration)
        if end <= start:
            return action, OtaError(
                "INVALID_RANGE", f"end {clock(end)} must be after start {clock(start)}"
            )
        length = end - start
        if kind == "get_frames" and action.num > o.max_frames_len:
            return action, OtaError(
                "TOO_MANY_FRAMES",
                f"num={action.num} exceeds the maximum of {o.max_frames_len} frames",
            )
        if kind == "get_audio" and length > o.max_audio_len + 1e-9:
            return action, OtaError(
                "AUDIO_TOO_LONG",
                f"{clock(length)} of audio requested; at most {o.max_audio_len:g}s per get_audio",
            )
        if kind == "get_clip" and length > o.max_clip_len + 1e-9:
            return action, OtaError(
                "CLIP_TOO_LONG",
                f"a {clock(length)} clip requested; at most {o.max_clip_len:g}s per get_clip",
            )
        if end != action.end:
            action = Action(type=kind, start=start, end=end, num=action.num)
        return action, None

    # -- perception -----------------------------------------------------------------------

    async def perceive(self, action: Action) -> Percept:
        """Run a checked sensing action; raises :class:`MediaError` if the media fail."""
        if action.type == "get_frames":
            return await self._frames(action.start, action.end, action.num)
        if action.type == "get_audio":
            head = label("audio", start=clock(action.start), end=clock(action.end))
            return Percept(head, await self._sound(action.start, action.end))
        assert action.type == "get_clip", action.type
        return await self._clip(action.start, action.end)

    async def _frames(self, start: float, end: float, num: int) -> Percept:
        shots = await asyncio.to_thread(self._frame_files, start, end, num)
        stamps = ", ".join(clock(t) for t, _ in shots)
        if self.release:
            key = "label.frame_one" if num == 1 else "label.frames"
            head = release.text(key, start=clock(start), end=clock(end), num=num)
            kept = release.text("label.placeholder_frames", head=head, timestamps=stamps)
            return Percept(head, await self._show(shots), placeholder=kept)
        head = label("frames", start=clock(start), end=clock(end), num=num, timestamps=stamps)
        return Percept(head, await self._show(shots))

    def _frame_label(self, t: float) -> str:
        if self.release:
            return release.text("label.frame", time=clock(t))
        return label("frame", time=clock(t))

    async def _show(self, shots: list[tuple[float, Path]]) -> list[Content]:
        if self.caps.image:
            parts: list[Content] = []
            for t, path in shots:
                parts.append(Text(text=self._frame_label(t)))
                parts.append(Image(path=path, mime_type="image/jpeg"))
            return parts
        text = await asyncio.to_thread(_ocr_text, shots)
        parts = [Text(text=text)]
        if self.describe is not None:
            described = await self.describe(shots)
            parts.append(Text(text=f"Description of the frames (perception model):\n{described}"))
        return parts

    async def _sound(self, start: float, end: float) -> list[Content]:
        if not self.has_audio:
            return [Text(text="No audio track.")]
        if self.caps.audio:
            from omnilab.media.audio import audio_segment

            wav = await asyncio.to_thread(audio_segment, self.source.path, start, end)
            if self.release:
                await asyncio.to_thread(self._verify, wav, end - start, needs_audio=True)
            return [Audio(path=wav, mime_type="audio/wav")]
        from omnilab.tools.evidence import sound_text

        return [Text(text=await asyncio.to_thread(sound_text, self.source.path, start, end))]

    async def _clip(self, start: float, end: float) -> Percept:
        head = label("clip", start=clock(start), end=clock(end))
        if self.caps.video:
            from omnilab.media.clips import clip

            edge = self.options.frame_max_edge or self.caps.max_image_edge
            o = self.options

            def cut(preset: str) -> Path:
                return clip(
                    self.source.path, start, end, max_edge=edge, preset=preset, crf=o.clip_crf
                )

            try:
                made = await asyncio.to_thread(cut, o.clip_preset)
            except MediaError:
                if o.clip_preset == "ultrafast":
                    raise
                made = await asyncio.to_thread(cut, "ultrafast")
            if self.release:
                await asyncio.to_thread(self._verify, made, end - start, needs_audio=self.has_audio)
            return Percept(head, [Video(path=made, mime_type="video/mp4")])
        num = max(
            2,
            min(self.options.max_frames_len, math.ceil((end - start) * self.options.clip_fps) + 1),
        )
        shots = await asyncio.to_thread(self._frame_files, start, end, num)
        parts: list[Content] = [Text(text=f"{len(shots)} frames of the clip:")]
        parts += await self._show(shots)
        parts.append(Text(text="The clip's sound:"))
        parts += await self._sound(start, end)
        return Percept(head, parts)

    def _verify(self, path: Path, expected: float, *, needs_audio: bool) -> None:
        """The release's ffprobe check of an extracted file (see the module docstring)."""
        from omnilab.media.probe import probe

        info = probe(path)
        length = info.duration or 0.0
        off = abs(length - expected) > _RELEASE_LENGTH_TOLERANCE and self.options.duration_check
        if length < _RELEASE_MIN_LENGTH or off:
            raise MediaError(
                MediaErrorCode.CORRUPT, f"Bad duration {length} (expect {expected})", path=path
            )
        if needs_audio and not info.has_audio:
            raise MediaError(MediaErrorCode.CORRUPT, "no sound in the extracted file", path=path)

    def _frame_files(self, start: float, end: float, num: int) -> list[tuple[float, Path]]:
        """``(exact time, jpeg)`` per frame, cached as a whole by request."""
        from omnilab.media.cache import MediaCache

        cache = MediaCache.default()
        edge = self.options.frame_max_edge or self.caps.max_image_edge
        params = {"start": start, "end": end, "num": num, "edge": edge, "v": _CACHE_VERSION}
        key = cache.key(self.source.path, "ota_frames", params)

        def produce(dest: Path) -> None:
            from omnilab.media.video import frames

            shots = frames(self.source.path, start, end, num, max_edge=edge)
            paths = [
                cache.path_for(cache.key(self.source.path, "ota_frame", {**params, "i": i}), ".jpg")
                for i in range(len(shots))
            ]

            def save(i: int) -> None:
                # Written beside the manifest under its lock: one lock and one eviction pass
                # per request instead of per frame.
                paths[i].parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                tmp = paths[i].with_name(f".{paths[i].name}.tmp")
                image = shots[i].image
                image = image if image.mode == "RGB" else image.convert("RGB")
                image.save(tmp, format="JPEG", quality=_JPEG_QUALITY)
                tmp.chmod(0o600)  # the media cache is private (see omnilab.media.cache)
                tmp.replace(paths[i])

            # Pillow releases the GIL while it encodes: the JPEGs are written on both cores.
            with ThreadPoolExecutor(2, thread_name_prefix="omnilab-jpeg") as pool:
                list(pool.map(save, range(len(shots))))
            listed = [
                {"t": shot.timestamp, "path": str(path)}
                for shot, path in zip(shots, paths, strict=True)
            ]
            dest.write_text(json.dumps(listed), encoding="utf-8")

        for _ in range(2):
            manifest = cache.get_or_create(key, ".json", produce)
            listed = json.loads(manifest.read_text(encoding="utf-8"))
            found = [(float(x["t"]), Path(x["path"])) for x in listed]
            if all(p.exists() for _, p in found):
                return found
            manifest.unlink(missing_ok=True)  # a frame was evicted: make the request again
        raise MediaError(MediaErrorCode.CORRUPT, "frames vanished from the media cache")


def _ocr_text(shots: Sequence[tuple[float, Path]]) -> str:
    from PIL import Image as PILImage

    from omnilab.tools.evidence import frames_text

    pictures = []
    for t, path in shots:
        with PILImage.open(path) as opened:
            pictures.append((t, opened.convert("RGB")))
    return frames_text(pictures)


def media_error(err: MediaError, source: InputFile) -> OtaError:
    """A media failure as the model sees it (the host path replaced by the input's id)."""
    return OtaError("MEDIA_ERROR", f"{err.code.value}: {source.redact(err.message)}")
