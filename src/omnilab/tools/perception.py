"""Active perception: ``read_video``, ``read_audio`` and ``read_image`` with OmniGAIA's schemas.

The schemas (names, descriptions, properties) are OmniGAIA's Appendix B.3, kept verbatim in
``tools/schemas/omnigaia_perception.json``. Ids resolve only to the task's own inputs, by id or
file name (:meth:`omnilab.inputs.InputSet.resolve`); paths are refused.

What comes back depends on the model's :class:`~omnilab.models.Capabilities`:

- a model that takes video gets the segment as a :class:`~omnilab.content.Video` part with its
  time range (the sound goes with it);
- a model that takes images gets frames (``perception_tools.video_fps``, at most
  ``perception_tools.video_max_frames``), each after a text part with its time, and the
  segment's audio as 16 kHz WAV when it also takes audio; crops are saved as PNG;
- otherwise the tool answers in text: OCR of frames or of the image, timed speech (ASR) and sound
  events, with the times examined (see :mod:`omnilab.tools.evidence`).

Times are whole seconds in the schema; ``t_end`` up to the next whole second past the end reads
as "to the end", since a model cannot name a fractional duration. Derived files (frames, audio
segments, crops) are served from the media cache, with a copy in ``workspace/perception/`` for
the task's code when a workspace is given (written without following links: see
:mod:`omnilab.tools._store`); the model never sees where: results name media by input id and
time range only.
"""

from __future__ import annotations

import math
from pathlib import Path

from omnilab.config import get_settings
from omnilab.content import Audio, Content, Image, Text, Video
from omnilab.errors import OmnilabError
from omnilab.inputs import FileKind, InputFile, InputSet
from omnilab.media._validate import check_time_range, require_audio, require_video
from omnilab.media.errors import MediaError, MediaErrorCode, fmt_s
from omnilab.media.image import crop, load_image
from omnilab.media.probe import MediaInfo
from omnilab.media.video import frames
from omnilab.models.capabilities import Capabilities
from omnilab.plural import plural
from omnilab.tools import evidence
from omnilab.tools._read_options import ReadOptions
from omnilab.tools._specs import omnigaia_function
from omnilab.tools._store import MediaStore
from omnilab.tools.base import Tool, tool

__all__ = ["InvalidToolArgs", "MediaStore", "ReadOptions", "active_perception_tools"]

_VIDEO: tuple[FileKind, ...] = ("video",)
_AUDIBLE: tuple[FileKind, ...] = ("audio", "video")
_IMAGE: tuple[FileKind, ...] = ("image",)


class InvalidToolArgs(OmnilabError):  # noqa: N818  (named after the code the model sees)
    """Arguments that pass the schema but cannot be served; the model sees ``INVALID_ARGS``."""

    code = "INVALID_ARGS"


def segment(
    f: InputFile,
    info: MediaInfo,
    t_start: float,
    t_end: float,
    *,
    max_seconds: float | None,
    clamp: bool = False,
) -> tuple[float, float]:
    """Validate ``[t_start, t_end]`` against ``info``; errors say what the file allows.
    ``clamp`` reads a ``t_end`` past the end as the end."""
    end = t_end
    duration = info.duration
    if duration is not None and duration < t_end <= math.ceil(duration):
        end = duration  # integer times cannot name a fractional end
    if clamp and duration is not None and t_start < duration < t_end:
        end = duration
    try:
        return check_time_range(
            info,
            t_start,
            end,
            names=("t_start", "t_end"),
            max_seconds=max_seconds,
            limit_setting="OMNILAB_MEDIA__MAX_CLIP_SECONDS",
        )
    except MediaError as e:
        if e.code is MediaErrorCode.INVALID_RANGE and duration is not None:
            raise MediaError(
                e.code, f"{e.message}; {f.id} runs from 0.0 s to {fmt_s(duration)}", path=e.path
            ) from None
        raise


def _frameplural(length: float, fps: float, cap: int) -> int:
    return max(1, min(cap, math.floor(length * fps + 1e-9) + 1))


class _Reader:
    """The state the three tools share: the inputs, the model's capabilities, the store."""

    def __init__(
        self,
        inputs: InputSet,
        capabilities: Capabilities,
        store: MediaStore,
        options: ReadOptions,
    ) -> None:
        self.inputs = inputs
        self.caps = capabilities
        self.store = store
        self.options = options
        self.audible: tuple[FileKind, ...] = (
            ("audio",) if options.read_audio_for == "audio" else _AUDIBLE
        )

    def video(self, video_id: str, t_start: float, t_end: float) -> list[Content]:
        f = self.inputs.resolve(video_id, kinds=_VIDEO)
        info = f.probe()
        require_video(info)
        limit = get_settings().media.max_clip_seconds if self.caps.video else None
        s, e = segment(f, info, t_start, t_end, max_seconds=limit, clamp=self.options.clamp_end)
        where = f"{f.id} from {fmt_s(s)} to {fmt_s(e)}"
        if self.caps.video:
            sound = "with its audio" if info.has_audio else "no audio track"
            return [Text(text=f"{where}, as video ({sound})"), Video(path=f.path, start=s, end=e)]
        parts: list[Content] = []
        if self.caps.image:
            parts.extend(self._frames(f, info, s, e, where))
        else:
            parts.append(Text(text=f"{where}, as text (this model does not take images)"))
            parts.append(Text(text=self._frames_text(f, s, e)))
        if not info.has_audio:
            parts.append(Text(text="No audio track."))
        elif self.caps.audio:
            parts.append(Text(text=f"Audio of {f.id} from {fmt_s(s)} to {fmt_s(e)}:"))
            parts.append(Audio(path=self.store.audio(f, s, e), mime_type="audio/wav"))
        else:
            parts.append(Text(text=evidence.sound_text(f.path, s, e)))
        return parts

    def _frames(
        self, f: InputFile, info: MediaInfo, s: float, e: float, where: str
    ) -> list[Content]:
        settings, opts = get_settings().perception_tools, self.options
        fps = opts.video_fps or settings.video_fps
        n = _frameplural(e - s, fps, opts.video_max_frames or settings.video_max_frames)
        edge = opts.video_max_edge or self.caps.max_image_edge or settings.frame_max_edge
        shots = frames(f.path, s, e, num=n, max_edge=edge)
        parts: list[Content] = [
            Text(text=f"{where}: {plural(len(shots), 'frame')}, each preceded by its time")
        ]
        for shot in shots:
            params: dict[str, object] = {"t": shot.requested, "edge": edge}
            name = f"{f.id}_t{shot.requested:.3f}_e{edge}.jpg"
            path = self.store.image(f.path, "read_video_frame", params, name, shot.image)
            parts.append(Text(text=f"t={fmt_s(shot.timestamp)}"))
            parts.append(Image(path=path, mime_type="image/jpeg"))
        return parts

    def _frames_text(self, f: InputFile, s: float, e: float) -> str:
        settings = get_settings().perception_tools
        fps = settings.video_fps
        n = _frameplural(e - s, fps, min(settings.video_max_frames, settings.ocr_max_frames))
        shots = frames(f.path, s, e, num=n)
        return evidence.frames_text([(shot.timestamp, shot.image) for shot in shots])

    def audio(self, audio_id: str, t_start: float, t_end: float) -> list[Content]:
        f = self.inputs.resolve(audio_id, kinds=self.audible)
        info = f.probe()
        require_audio(info)
        s, e = segment(f, info, t_start, t_end, max_seconds=None, clamp=self.options.clamp_end)
        cap = self.options.audio_max_s
        cut = ""
        if cap is not None and e - s > cap:
            e = s + cap
            cut = f" (cut to {fmt_s(cap)}, the most one read_audio call returns)"
        track = " (the video's audio track)" if f.kind == "video" else ""
        where = f"{f.id}{track} from {fmt_s(s)} to {fmt_s(e)}{cut}"
        if self.caps.audio:
            wav = self.store.audio(f, s, e)
            return [Text(text=f"{where}:"), Audio(path=wav, mime_type="audio/wav")]
        return [
            Text(text=f"{where}, as text (this model does not take audio)"),
            Text(text=evidence.sound_text(f.path, s, e)),
        ]

    def image(self, image_ids: list[str] | str, crop_box: list[float] | None) -> list[Content]:
        ids = [image_ids] if isinstance(image_ids, str) else list(image_ids)
        if not ids:
            valid = ", ".join(self.inputs.ids(_IMAGE)) or "none in this task"
            raise InvalidToolArgs(f"image_ids is empty; give at least one image id ({valid})")
        files = list(
            {f.id: f for f in (self.inputs.resolve(i, kinds=_IMAGE) for i in ids)}.values()
        )
        parts: list[Content] = []
        for f in files:
            parts.extend(self._image(f, crop_box))
        return parts

    def _image(self, f: InputFile, crop_box: list[float] | None) -> list[Content]:
        info = f.probe()
        where = f"{f.id} ({info.width}x{info.height})"
        if crop_box is None and self.caps.image:
            return [Text(text=f"{where}:"), Image(path=f.path)]
        picture = load_image(f.path)
        if crop_box is not None:
            picture = crop(picture, crop_box, name=f.id)
            box = [round(v) for v in crop_box]
            where += f" cropped to {box} ({picture.width}x{picture.height})"
            if self.caps.image:
                name = f"{f.id}_crop_{'_'.join(map(str, box))}.png"
                path = self.store.image(f.path, "read_image_crop", {"box": box}, name, picture)
                return [Text(text=f"{where}:"), Image(path=path, mime_type="image/png")]
        return [
            Text(text=f"{where}, as text (this model does not take images)"),
            Text(text=evidence.image_text(picture)),
        ]


def active_perception_tools(
    inputs: InputSet,
    *,
    capabilities: Capabilities,
    workspace: Path | None = None,
    options: ReadOptions | None = None,
) -> list[Tool]:
    """``read_video``, ``read_audio`` and ``read_image`` over ``inputs``, for a model that has
    ``capabilities``, with OmniGAIA's exact schemas (Appendix B.3), as ``options`` say."""
    reader = _Reader(inputs, capabilities, MediaStore(workspace), options or ReadOptions())
    video_spec = omnigaia_function("read_video", fresh=False)
    audio_spec = omnigaia_function("read_audio", fresh=False)
    image_spec = omnigaia_function("read_image", fresh=False)

    @tool(
        name="read_video",
        description=video_spec["description"],
        parameters=video_spec["parameters"],
    )
    def read_video(video_id: str, t_start: float, t_end: float) -> list[Content]:
        """Read a segment of a video: frames with times and its audio, or text evidence.

        Args:
            video_id: The id (or file name) of a video input.
            t_start: Start time in seconds.
            t_end: End time in seconds.
        """
        return reader.video(video_id, t_start, t_end)

    @tool(
        name="read_audio",
        description=audio_spec["description"],
        parameters=audio_spec["parameters"],
    )
    def read_audio(audio_id: str, t_start: float, t_end: float) -> list[Content]:
        """Listen to a segment of an audio input or of a video's audio track.

        Args:
            audio_id: The id (or file name) of an audio or video input.
            t_start: Start time in seconds.
            t_end: End time in seconds.
        """
        return reader.audio(audio_id, t_start, t_end)

    @tool(
        name="read_image",
        description=image_spec["description"],
        parameters=image_spec["parameters"],
    )
    def read_image(
        image_ids: list[str] | str, crop_box: list[float] | None = None
    ) -> list[Content]:
        """View image inputs, optionally cropped to one box.

        Args:
            image_ids: Ids (or file names) of image inputs.
            crop_box: [left, top, right, bottom] in pixels, applied to every image.
        """
        return reader.image(image_ids, crop_box)

    return [read_video, read_audio, read_image]
