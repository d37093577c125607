"""Options of the ``ota`` agent, with OmniAgent's defaults, and the turn limit per video.

The paper fills its instruction template's runtime parameters "according to the configuration
in Sec. 4" (B.5) but Sec. 4 prints only the turn limit's range, ``K in [5, 32]`` (agentic SFT)
scaled with the video's duration. The values below are the authors' released defaults
(HarryHsing/OmniAgent ``demo/omniagent_inference.py``: ``max_steps=32``, ``max_frames_len=60``,
``max_audio_len=300``, ``max_clip_len=60``, ``MIN_MAX_STEPS=5``), which are also the upper ends
of the B.3 grids (frames 30-60, clips 30-60 s, audio 150-300 s). How K grows with duration is
not printed in the paper; :func:`turn_limit` is our choice, written down in docs/agents-ota.md.
The authors' README ("Test-Time Scaling") prints theirs, ``min(MIN_MAX_STEPS + int(duration /
max_clip_len), MAX_STEPS)``: ``seconds_per_step=60, step_rounding="floor"`` reproduces it (the
``omniagent-paper`` preset sets both).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnilab.models.types import GenerateConfig

__all__ = ["OtaOptions", "StepRounding", "X264Preset", "turn_limit"]

StepRounding = Literal["ceil", "floor"]

X264Preset = Literal[
    "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"
]


class OtaOptions(BaseModel):
    """Options of the ``ota`` agent (``get_agent("ota", **options)``, ``-O key=value``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int = Field(default=32, ge=1, le=256)
    """Most turns K of a run (Sec. 4: K in [5, 32]); the run's max_turns budget caps it too."""
    min_steps: int = Field(default=5, ge=1)
    """Fewest turns K of a run when K scales with duration (Sec. 4's lower end; at most
    max_steps)."""
    dynamic_steps: bool = True
    """Scale K with the video's duration (Sec. 4); off: K = max_steps."""
    seconds_per_step: float = Field(default=240.0, gt=0)
    """With dynamic_steps, one more turn per this many seconds of video above min_steps."""
    step_rounding: StepRounding = "ceil"
    """How duration / seconds_per_step becomes whole turns: ceil (a started block earns a turn)
    or floor (the authors' ``int(duration / max_clip_len)``)."""
    max_frames_len: int = Field(default=60, ge=1, le=256)
    """Most frames one get_frames may ask for."""
    max_audio_len: float = Field(default=300.0, gt=0)
    """Longest get_audio range, in seconds."""
    max_clip_len: float = Field(default=60.0, gt=0)
    """Longest get_clip range, in seconds."""
    confidence_threshold: float = Field(default=0.9, ge=0, le=1)
    """Figure 4's "0.9" rule: an answer below it before the final step is refused."""
    strict_confidence: bool = True
    """Refuse low-confidence answers before the final step (LOW_CONFIDENCE); off: accept them
    (the authors' demo runs with STRICT_CONFIDENCE_CHECK=False) and only record the confidence."""
    grammar: bool | None = None
    """Constrain replies to the turn's JSON schema (response_format); default: when the model
    declares json_schema support (the local model, vLLM, SGLang, OpenAI)."""
    frame_max_edge: int | None = Field(default=None, ge=16)
    """Shrink frames and clips to this longest edge; default: the model's max_image_edge, else
    full size."""
    clip_preset: X264Preset = "superfast"
    """x264 preset of get_clip (B.2: "superfast"; "ultrafast" is B.2's fallback under load)."""
    clip_crf: int = Field(default=20, ge=0, le=51)
    """x264 constant rate factor of get_clip (B.2: CRF 20)."""
    clip_fps: float = Field(default=1.0, gt=0)
    """Frames per second of a clip sent to a model without video input (at most max_frames_len)."""
    end_tolerance: float = Field(default=0.5, ge=0)
    """An end at most this far past the duration is read as the end (B.2's boundary fallback)."""
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    """Sampling settings of every agent call (max_tokens caps each reply)."""


def turn_limit(options: OtaOptions, duration: float | None, max_turns: int) -> int:
    """K for a video of ``duration`` seconds: ``min_steps + ceil(duration / seconds_per_step)``
    (``floor`` with ``step_rounding="floor"``) clamped to ``[min_steps, max_steps]`` (``max_steps`` without dynamic steps or a duration),
    and never above the run's ``max_turns`` budget."""
    k = options.max_steps
    if options.dynamic_steps and duration is not None:
        low = min(options.min_steps, options.max_steps)
        blocks = duration / options.seconds_per_step
        grown = low + (
            math.floor(blocks) if options.step_rounding == "floor" else math.ceil(blocks)
        )
        k = max(low, min(options.max_steps, grown))
    return max(1, min(k, max_turns))
