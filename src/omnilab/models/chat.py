"""One-shot chat: a prompt plus optional media files to a model (what ``omnilab chat`` runs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omnilab.content import Audio, Content, Image, Text, Video
from omnilab.models.registry import get_model
from omnilab.models.types import GenerateConfig, Message, ModelOutput

__all__ = ["chat"]


def chat(
    prompt: str,
    *,
    model: str | None = None,
    images: Sequence[Path] = (),
    audio: Sequence[Path] = (),
    videos: Sequence[Path] = (),
    system: str | None = None,
    config: GenerateConfig | None = None,
) -> ModelOutput:
    """Ask ``model`` (default: the configured one) ``prompt`` with the given media attached."""
    parts: list[Content] = [Image(path=p) for p in images]
    parts += [Audio(path=p) for p in audio]
    parts += [Video(path=p) for p in videos]
    parts.append(Text(text=prompt))
    messages = [Message.system(system)] if system else []
    messages.append(Message(role="user", content=parts))
    return get_model(model).generate_sync(messages, config=config)
