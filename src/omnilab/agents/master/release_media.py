"""What Agent-Omni's released modality agents send (``rules="release"``), call by call.

huawei-lin/Agent-Omni ``src/subagents/*`` and ``src/models.py`` (``construct_message``): a
call's user message is the text input (the text agent's), then the images, then the audio, then
the question, with no label. ``src/utils.py`` re-encodes each image as a PNG whose longest side
is at most 512 (``pil_to_base64``: ``thumbnail((512, 512))``) and each audio file as a mono
16-bit WAV at its own sample rate (``file_to_base64_wav``). The image agent sends its first
``max_image_input`` images (its loop returns after one batch), the audio agent one call per
file (``max_audio_input`` 1), the video agent frames at 1 per second (evenly spread
``max_frames_num`` when there are more) stretched to 336x336, ``max_image_input`` per call
(``sample_frames``); the replies of one question's calls are joined as they are (``+=``).

omnilab's differences here are named in the ``agent-omni-paper`` preset: every video (the
release's agent stops after the first), and each video's sound track for the audio agent.
"""

from __future__ import annotations

import asyncio
import re
import wave
from pathlib import Path

import numpy as np
from PIL import Image as PILImage

from omnilab import _wsread
from omnilab.agents.master.options import MasterOptions
from omnilab.agents.master.pool import AgentInput, ModalityAgent
from omnilab.agents.master.views import agent_parts, takes_input
from omnilab.content import Audio, Content, Image, Text
from omnilab.models.capabilities import Capabilities

__all__ = ["FRAME_SIZE", "IMAGE_MAX_SIDE", "batches", "frame_times", "png_image", "wav_audio"]

IMAGE_MAX_SIDE = 512
"""``pil_to_base64(max_side=512)``: every image sent, frames included."""
FRAME_SIZE = (336, 336)
"""``sample_frames``: ``video_config.get("image_size", (336, 336))``, bicubic, aspect not kept."""

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def _name(item: AgentInput, suffix: str) -> str:
    return f"release-{_SAFE.sub('_', item.id)}{suffix}"


def _save_png(picture: PILImage.Image, dest: Path) -> Path:
    rgb = picture.convert("RGB")
    rgb.thumbnail((IMAGE_MAX_SIDE, IMAGE_MAX_SIDE))
    dest.parent.mkdir(parents=True, exist_ok=True)
    rgb.save(dest, format="PNG")
    return dest


def png_image(item: AgentInput, views: Path) -> Path:
    """The image as the release sends it: RGB PNG, longest side at most 512 (never enlarged)."""
    dest = views / _name(item, ".png")
    if not dest.exists():
        with _wsread.open_image(item.file.path, name=item.id) as opened:
            _save_png(opened, dest)
    return dest


def wav_audio(item: AgentInput, views: Path) -> Path:
    """The audio (or a video's sound track) as the release sends it: the channels averaged,
    16-bit PCM WAV at the source's own sample rate."""
    from omnilab.media.audio import audio_samples
    from omnilab.media.probe import probe

    dest = views / _name(item, ".wav")
    if dest.exists():
        return dest
    rate = probe(item.file.path).sample_rate or 16000
    mono = np.clip(audio_samples(item.file.path, sample_rate=rate), -1.0, 1.0)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(dest), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.round(mono * 32767.0).astype("<i2").tobytes())
    return dest


def frame_times(frame_count: int, fps: float, max_frames: int) -> list[float]:
    """``sample_frames``' frames as times: every ``round(fps)``-th frame, or ``max_frames``
    frame indices ``np.linspace(0, n - 1, max_frames, dtype=int)`` when that is more."""
    step = max(1, round(fps))
    index = list(range(0, frame_count, step))
    if len(index) > max_frames:
        index = np.linspace(0, frame_count - 1, max_frames, dtype=int).tolist()
    return [i / fps for i in index]


def video_frames(item: AgentInput, views: Path, max_frames: int) -> list[Path]:
    """The video's frames as the release sends them: PNG, stretched to 336x336."""
    from omnilab.media.probe import probe
    from omnilab.media.video import frames_at

    info = probe(item.file.path)
    fps = info.fps or 1.0
    count = info.frame_count or max(1, int((info.duration or 0.0) * fps))
    times = frame_times(count, fps, max_frames)
    out: list[Path] = []
    shots = None
    for i, _ in enumerate(times):
        dest = views / _name(item, f"-f{i:03d}.png")
        if not dest.exists():
            shots = shots or frames_at(item.file.path, times)
            picture = shots[i].image.resize(FRAME_SIZE, PILImage.Resampling.BICUBIC)
            _save_png(picture, dest)
        out.append(dest)
    return out


def _chunks(parts: list[Content], size: int | None) -> list[list[Content]]:
    if size is None or not parts:
        return [parts]
    return [parts[i : i + size] for i in range(0, len(parts), size)]


async def batches(
    agent: ModalityAgent, caps: Capabilities, views: Path, options: MasterOptions
) -> list[list[Content]]:
    """The media parts of each call one question of ``agent`` makes (see the module docstring);
    an input the agent's model cannot take goes as its evidence digest, as under omnilab's
    rules."""
    digests: list[Content] = []
    media: list[AgentInput] = []
    for item in agent.inputs:
        if agent.modality != "text" and not takes_input(item, caps):
            digests += await agent_parts(agent, caps, views, only=item.id)
        else:
            media.append(item)
    size = options.max_image_input
    if agent.modality == "text":
        raw: list[Content] = []
        for item in media:  # the document's text alone, without omnilab's label line
            label = f"[{item.id}: {item.file.path.name}]\n"
            for part in await agent_parts(agent, caps, views, only=item.id):
                if isinstance(part, Text):
                    raw.append(Text(text=part.text.removeprefix(label)))
        return [raw]
    if agent.modality == "image":
        paths = await asyncio.to_thread(lambda: [png_image(i, views) for i in media])
        return [[*digests, *_chunks([Image(path=p) for p in paths], size)[0]]]
    if agent.modality == "audio":
        paths = await asyncio.to_thread(lambda: [wav_audio(i, views) for i in media])
        calls = [[Audio(path=p, mime_type="audio/wav")] for p in paths]
        return [[*digests, *c] for c in calls] if calls else [digests]
    found: list[list[Content]] = []
    for item in media:
        frames = await asyncio.to_thread(video_frames, item, views, options.max_frames_num)
        found += _chunks([Image(path=p) for p in frames], size)
    return [[*digests, *c] for c in found] if found else [digests]
