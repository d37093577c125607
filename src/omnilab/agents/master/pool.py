"""The model pool: which model answers for each modality, and which inputs each agent sees.

Roles ``text``, ``image``, ``video``, ``audio`` and ``master`` each name a model
(``--role image=...``, ``agents.roles`` in ``omnilab.toml``, ``roles=`` in Python); a role left
unset falls back to the agent's model. A role whose model cannot take its modality is refused
before the run (:func:`check_pool`) when it is given explicitly; a role left to the agent's model
that cannot take its media (a text-only model) gets each input as its text evidence digest
instead (:mod:`omnilab.agents.master.views`), so the pool runs on one text model too.

Each modality agent gets every input of its kind (Agent-Omni's release sends every image and
audio file but only the first video), and the audio agent also gets each video's sound track as
an input of its own (the release dropped it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from omnilab.agents.base import AgentConfigError
from omnilab.inputs import InputFile, InputSet
from omnilab.models.capabilities import Capabilities
from omnilab.models.model import Model

__all__ = [
    "MODALITIES",
    "ROLES",
    "AgentInput",
    "Modality",
    "ModalityAgent",
    "check_pool",
    "modality_agents",
    "pool_models",
]

Modality = Literal["text", "image", "video", "audio"]
MODALITIES: tuple[Modality, ...] = ("text", "image", "video", "audio")
ROLES: tuple[str, ...] = (*MODALITIES, "master")

# What each modality's model must take natively. A video model without video input gets frames.
_NEEDS: dict[Modality, tuple[str, ...]] = {
    "text": (),
    "image": ("image",),
    "video": ("video", "image"),
    "audio": ("audio",),
}


@dataclass(frozen=True)
class AgentInput:
    """One input as a modality agent sees it."""

    id: str
    """The id prompts use: the file's id, ``<video id>:audio`` for a video's sound track."""
    file: InputFile
    track_of: str | None = None
    """For a video's sound track: the video's id."""


@dataclass(frozen=True)
class ModalityAgent:
    """One agent of the pool: its modality (also its role) and its inputs."""

    modality: Modality
    inputs: tuple[AgentInput, ...]

    @property
    def name(self) -> str:
        """The name the master uses (``image_agent``), as in the paper's decision prompt."""
        return f"{self.modality}_agent"


def pool_models(model: Model, roles: Mapping[str, Model]) -> dict[str, Model]:
    """``roles`` with every pool role it lacks bound to ``model`` (the agent's)."""
    return {**{role: model for role in ROLES}, **roles}


def _takes(caps: Capabilities, modality: Modality) -> bool:
    needs = _NEEDS[modality]
    return not needs or any(getattr(caps, flag) for flag in needs)


def _has_sound(f: InputFile) -> bool:
    from omnilab.media.errors import MediaError

    try:
        return f.probe().has_audio
    except MediaError:
        return False  # unreadable: the video agent's view will say so; there is no track to add


def modality_agents(inputs: InputSet) -> list[ModalityAgent]:
    """The pool's agents for ``inputs``: ``text_agent`` always (text files, and reasoning over
    what the master tells it), the others when the task has inputs of their kind."""
    by: dict[Modality, list[AgentInput]] = {m: [] for m in MODALITIES}
    for f in inputs:
        if f.kind in ("text", "document"):
            by["text"].append(AgentInput(f.id, f))
        elif f.kind == "image":
            by["image"].append(AgentInput(f.id, f))
        elif f.kind == "audio":
            by["audio"].append(AgentInput(f.id, f))
        elif f.kind == "video":
            by["video"].append(AgentInput(f.id, f))
            if _has_sound(f):
                by["audio"].append(AgentInput(f"{f.id}:audio", f, track_of=f.id))
    return [ModalityAgent(m, tuple(by[m])) for m in MODALITIES if m == "text" or by[m]]


def check_pool(
    models: Mapping[str, Model], explicit: set[str], agents: list[ModalityAgent]
) -> list[str]:
    """Refuse (:class:`AgentConfigError`, one line) an ``explicit`` role whose model cannot
    take its modality; return the modalities of ``agents`` whose fallback model cannot, which
    get text evidence digests instead."""
    for modality in MODALITIES:
        model = models[modality]
        if modality not in explicit or _takes(model.capabilities, modality):
            continue
        kinds = " or ".join(_NEEDS[modality])
        raise AgentConfigError(
            f"role {modality} needs a model that takes {kinds}, but {model.name} does not "
            f"(flags: {model.capabilities.describe()}); pass --role {modality}=MODEL with "
            f"{_NEEDS[modality][0]} input, set its flags in models.capabilities, or leave the "
            "role out to hand that agent text evidence digests"
        )
    return [
        a.modality
        for a in agents
        if a.inputs
        and a.modality not in explicit
        and not _takes(models[a.modality].capabilities, a.modality)
    ]
