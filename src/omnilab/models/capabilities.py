"""Capability flags: what a model accepts and how media are sent to it.

Flags come from three layers, later ones win: the provider's defaults, a built-in table of model
families (matched by glob on the model id) and ``models.capabilities`` in the settings (matched by
glob on the full name, ``provider:model``). Agents and adapters read flags; nothing else decides
how media travel.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnilab.models.errors import ModelConfigError

__all__ = ["FAMILIES", "Capabilities", "resolve_capabilities"]


class Capabilities(BaseModel):
    """What one model accepts natively."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    image: bool = False
    """Images as ``image_url`` data URLs."""
    audio: bool = False
    """Audio as ``input_audio`` parts (WAV or MP3)."""
    video: bool = False
    """Video as ``video_url`` parts (vLLM / Qwen-Omni style); otherwise frames (+ audio track)."""
    documents: bool = False
    """PDFs and other documents as ``file`` parts; otherwise text files are inlined as text."""
    tool_calls: bool = True
    """Native tool calls; otherwise tools are described in the prompt and calls parsed from text."""
    json_schema: bool = False
    """Output can be constrained to a JSON schema: a ``response_format`` is sent to the server
    (off: the schema is described in the prompt instead)."""
    video_frames: int = Field(default=8, ge=1, le=256)
    """Frames sampled from a video when it is sent as images."""
    max_image_edge: int | None = Field(default=None, ge=16)
    """Images and frames are shrunk to this longest edge before sending; ``None`` keeps size."""
    context_tokens: int | None = Field(default=None, ge=256)
    """The context window in tokens, when known (the embedded model: ``models.local_n_ctx``):
    agents cut the longest messages of a conversation that would not fit it."""
    tool_media: bool = False
    """Media returned by a tool go inside its tool message (servers that accept non-text parts
    there, as the OmniGAIA authors' vLLM setup does); off: tool messages carry text and the
    media follow in a user turn, which every OpenAI-compatible server accepts."""

    def describe(self) -> str:
        """A short list of the accepted inputs, e.g. ``text image audio tools``."""
        kinds = ["text"] + [k for k in ("image", "audio", "video", "documents") if getattr(self, k)]
        if self.tool_calls:
            kinds.append("tools")
        if self.json_schema:
            kinds.append("json-schema")
        return " ".join(kinds)


# (model-id glob, flags). Matched case-insensitively in order; every match applies, later wins.
FAMILIES: tuple[tuple[str, Mapping[str, bool | int]], ...] = (
    ("gpt-4o*", {"image": True}),
    ("gpt-4.1*", {"image": True}),
    ("gpt-5*", {"image": True, "documents": True}),
    ("o[134]*", {"image": True}),
    ("gpt-4o*audio*", {"image": False, "audio": True}),
    ("gemini*", {"image": True, "audio": True}),
    ("*qwen*vl*", {"image": True, "video": True}),
    ("*qvq*", {"image": True}),
    ("*omni*", {"image": True, "audio": True, "video": True}),
    ("*minicpm-o*", {"image": True, "audio": True, "video": True}),
    ("*qwen2-audio*", {"audio": True}),
    ("*llava*", {"image": True}),
    ("*gemma-3*", {"image": True}),
    ("*gemma3*", {"image": True}),
    ("*pixtral*", {"image": True}),
    ("*llama-4*", {"image": True}),
    ("*llama4*", {"image": True}),
    ("*vision*", {"image": True}),
    ("*internvl*", {"image": True, "video": True}),
    ("claude*", {"image": True, "documents": True}),
    ("*/claude*", {"image": True, "documents": True}),
)


def resolve_capabilities(
    provider: str,
    model_id: str,
    defaults: Capabilities,
    overrides: Mapping[str, Mapping[str, bool | int | float]],
    *,
    families: bool = True,
) -> Capabilities:
    """The flags of ``provider:model_id``: provider defaults, then families (unless
    ``families`` is off: a provider whose adapter fixes what it takes), then settings."""
    flags: dict[str, object] = defaults.model_dump()
    lowered = model_id.lower()
    for pattern, family in FAMILIES if families else ():
        if fnmatchcase(lowered, pattern):
            flags.update(family)
    full = f"{provider}:{model_id}"
    for pattern, override in overrides.items():
        if fnmatchcase(full, pattern) or fnmatchcase(model_id, pattern):
            flags.update(override)
    try:
        return Capabilities.model_validate(flags)
    except ValidationError as e:
        names = ", ".join(Capabilities.model_fields)
        problem = e.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise ModelConfigError(
            full,
            f"bad capability override {where!r} in models.capabilities ({problem['msg']})",
            advice=f"flags are: {names}",
        ) from None
