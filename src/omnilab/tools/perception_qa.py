"""Tool-based perception: ``audio_qa`` and ``vision_qa`` answered by a perception model.

OmniGAIA's ablation (§5.5, Table 3) hands a modality to a perception model behind a tool. The
schemas and the two system prompts are Appendix B.4, verbatim, in
``tools/schemas/omnigaia_perception.json`` and ``tools/prompts/{audio,vision}_qa_system.txt``.

The perception model (role ``perception``) is sent the B.4 system prompt and one user message:
that modality's content, then the question. It never sees the other modality: ``audio_qa`` on a
video sends only its audio track (16 kHz WAV), ``vision_qa`` on a video sends only frames
(``capabilities.video_frames`` of them over the whole video, each after its time). The
``*_path`` arguments take an input id or file name, like the active perception tools: the
paper's "path" is a name from the input list here, and real paths are refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from pathlib import Path

from omnilab.content import Audio, Content, Image, Text
from omnilab.errors import OmnilabError
from omnilab.inputs import FileKind, InputFile, InputSet
from omnilab.media._validate import require_audio
from omnilab.media.audio import audio_segment
from omnilab.media.errors import fmt_s
from omnilab.media.video import frames_at
from omnilab.models.errors import ModelError
from omnilab.models.model import Model
from omnilab.models.types import Message
from omnilab.tools._specs import load_prompt, omnigaia_function
from omnilab.tools.base import Tool, ToolResult, tool
from omnilab.tools.perception import InvalidToolArgs, MediaStore

__all__ = ["PERCEPTION_QA_TOOLS", "PerceptionUnsupported", "perception_qa_tools"]

PERCEPTION_QA_TOOLS = ("audio_qa", "vision_qa")
"""The names :func:`perception_qa_tools` can build."""

_AUDIO: tuple[FileKind, ...] = ("audio",)
_VIDEO: tuple[FileKind, ...] = ("video",)
_IMAGE: tuple[FileKind, ...] = ("image",)


class PerceptionUnsupported(OmnilabError):  # noqa: N818  (named after the code the model sees)
    """The perception model does not take the modality its tool needs."""

    code = "UNSUPPORTED"


def _one_source(
    inputs: InputSet, first: tuple[str, str | None, tuple[FileKind, ...]], video: str | None
) -> InputFile:
    """The single input named by ``first`` (``name, value, kinds``) or by ``video_path``."""
    name, value, kinds = first
    if value and video:
        raise InvalidToolArgs(f"give {name} or video_path, not both")
    if value:
        return inputs.resolve(value, kinds=kinds)
    if video:
        return inputs.resolve(video, kinds=_VIDEO)
    valid = ", ".join(inputs.ids((*kinds, "video"))) or "none in this task"
    raise InvalidToolArgs(f"give {name} or video_path (valid ids: {valid})")


def _audio_parts(f: InputFile, store: MediaStore) -> list[Content]:
    info = f.probe()  # a missing or broken file fails here, before the model is called
    require_audio(info)
    if f.kind == "audio":
        return [Audio(path=f.path)]
    # Only the sound of a video goes: its 16 kHz WAV track, which every audio model accepts.
    wav = store.audio(f, 0.0, info.duration) if info.duration else audio_segment(f.path)
    return [Audio(path=wav, mime_type="audio/wav")]


def _vision_parts(f: InputFile, store: MediaStore, count: int, edge: int | None) -> list[Content]:
    info = f.probe()
    if f.kind == "image":
        return [Image(path=f.path)]
    duration = info.duration or 0.0
    # Frame centres of equal slices: never the black first frame or the last partial one.
    times = [duration * (i + 0.5) / count for i in range(count)]
    parts: list[Content] = [Text(text=f"{count} frames of {f.id}, each preceded by its time:")]
    for shot in frames_at(f.path, times, max_edge=edge):
        params: dict[str, object] = {"t": shot.requested, "edge": edge}
        name = f"{f.id}_qa_t{shot.requested:.3f}_e{edge}.jpg"
        path = store.image(f.path, "vision_qa_frame", params, name, shot.image)
        parts.append(Text(text=f"t={fmt_s(shot.timestamp)}"))
        parts.append(Image(path=path, mime_type="image/jpeg"))
    return parts


async def _ask(model: Model, prompt: str, media: list[Content], question: str) -> ToolResult:
    messages = [Message.system(prompt), Message.user(*media, question)]
    try:
        output = await model.generate(messages)
    except ModelError as e:  # the message is already free of keys (the Model redacts it)
        return ToolResult.fail("PERCEPTION_FAILED", f"perception model {model.name}: {e}")
    answer = output.text.strip() or "(the perception model gave no answer)"
    return ToolResult(
        content=[Text(text=answer)],
        metadata={"model": model.name, "usage": output.usage.model_dump()},
    )


def _require(model: Model, flag: str, tool_name: str) -> None:
    if not getattr(model.capabilities, flag):
        raise PerceptionUnsupported(
            f"{tool_name} needs a perception model that takes {flag}; {model.name} does not "
            f"(set the perception model, or models.capabilities for it)"
        )


def perception_qa_tools(
    inputs: InputSet,
    *,
    model: Model,
    which: Collection[str] = PERCEPTION_QA_TOOLS,
    workspace: Path | None = None,
) -> list[Tool]:
    """``audio_qa`` and/or ``vision_qa`` over ``inputs``, answered by ``model``.

    ``which`` picks the tools (OmniGAIA's settings: audio as a tool, vision as a tool, both).
    Derived files (WAV tracks, frames) go to ``workspace/perception/`` or the media cache.
    """
    unknown = sorted(set(which) - set(PERCEPTION_QA_TOOLS))
    if unknown:
        raise ValueError(f"unknown perception tools {unknown}; known: {PERCEPTION_QA_TOOLS}")
    store = MediaStore(workspace)
    tools: list[Tool] = []
    if "audio_qa" in which:
        spec = omnigaia_function("audio_qa")
        prompt = load_prompt("audio_qa_system")

        @tool(name="audio_qa", description=spec["description"], parameters=spec["parameters"])
        async def audio_qa(
            question: str, audio_path: str | None = None, video_path: str | None = None
        ) -> ToolResult:
            """Answer a question from the audio of one input, with the perception model.

            Args:
                question: The question to answer.
                audio_path: Id or file name of an audio input.
                video_path: Id or file name of a video input (its audio track is used).
            """
            f = _one_source(inputs, ("audio_path", audio_path, _AUDIO), video_path)
            _require(model, "audio", "audio_qa")
            media = await asyncio.to_thread(_audio_parts, f, store)
            return await _ask(model, prompt, media, question)

        tools.append(audio_qa)
    if "vision_qa" in which:
        spec = omnigaia_function("vision_qa")
        prompt_v = load_prompt("vision_qa_system")

        @tool(name="vision_qa", description=spec["description"], parameters=spec["parameters"])
        async def vision_qa(
            question: str, image_path: str | None = None, video_path: str | None = None
        ) -> ToolResult:
            """Answer a question from the picture of one input, with the perception model.

            Args:
                question: The question to answer.
                image_path: Id or file name of an image input.
                video_path: Id or file name of a video input (frames only, no sound).
            """
            f = _one_source(inputs, ("image_path", image_path, _IMAGE), video_path)
            _require(model, "image", "vision_qa")
            caps = model.capabilities
            media = await asyncio.to_thread(
                _vision_parts, f, store, caps.video_frames, caps.max_image_edge
            )
            return await _ask(model, prompt_v, media, question)

        tools.append(vision_qa)
    return tools
