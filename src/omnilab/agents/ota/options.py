"""Options of the ``ota`` agent, with OmniAgent's defaults, and the turn limit per video.

The paper fills its instruction template's runtime parameters "according to the configuration
in Sec. 4" (B.5) but Sec. 4 prints only the turn limit's range, ``K in [5, 32]`` (agentic SFT)
scaled with the video's duration. The values below are the authors' released defaults
(HarryHsing/OmniAgent ``demo/omniagent_inference.py``: ``max_steps=32``, ``max_frames_len=60``,
``max_audio_len=300``, ``max_clip_len=60``, ``MIN_MAX_STEPS=5``), which are also the upper ends
of the B.3 grids (frames 30-60, clips 30-60 s, audio 150-300 s). How K grows with duration is
not printed in the paper; :func:`turn_limit` is our choice, written down in docs/agents-ota.md.
The authors' README ("Test-Time Scaling") prints theirs, ``min(MIN_MAX_STEPS + int(duration /
max_clip_len), MAX_STEPS)``: ``seconds_per_step="clip", step_rounding="floor"`` reproduces it
(the ``omniagent-paper`` preset sets both; ``video_env.py`` divides by the run's
``max_clip_len``, randomised or not).

``rules`` picks whose environment texts and checks a run uses: omnilab's (Figure 4 as printed,
tolerant reading, omnilab's error codes) or the release's (``video_env.py`` and
``video_prompt.py``, :mod:`omnilab.agents.ota.release`). ``random_resources`` is the release's
``RANDOM_RESOURCE_SFT`` (B.3's randomised limits for SFT synthesis), :func:`randomised`.
"""

from __future__ import annotations

import math
import random
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnilab.models.types import GenerateConfig

__all__ = ["OtaOptions", "Rules", "StepRounding", "X264Preset", "randomised", "turn_limit"]

StepRounding = Literal["ceil", "floor"]
Rules = Literal["omnilab", "release"]

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
    seconds_per_step: Annotated[float, Field(gt=0)] | Literal["clip"] = 240.0
    """With dynamic_steps, one more turn per this many seconds of video above min_steps;
    ``"clip"``: per max_clip_len seconds (the release's ``int(duration / max_clip_len)``)."""
    step_rounding: StepRounding = "ceil"
    """How duration / seconds_per_step becomes whole turns: ceil (a started block earns a turn)
    or floor (the authors' ``int(duration / max_clip_len)``)."""
    max_frames_len: int = Field(default=60, ge=1, le=256)
    """Most frames one get_frames may ask for."""
    max_audio_len: float = Field(default=300.0, gt=0)
    """Longest get_audio range, in seconds."""
    max_clip_len: float = Field(default=60.0, gt=0)
    """Longest get_clip range, in seconds."""
    confidence_threshold: float | None = Field(default=None, ge=0, le=1)
    """An opt-in gate: an answer below this confidence before the final step is refused
    (LOW_CONFIDENCE). Off by default and in every preset: Figure 4's "0.9" rule is an
    instruction to the model, and the released environment enforces no threshold."""
    require_confidence: bool = True
    """A reply without a ``confidence`` key is an error (Figure 4: "You MUST include" it); the
    release's ``STRICT_CONFIDENCE_CHECK`` flag, off in its demo and batch evaluator."""
    rules: Rules = "omnilab"
    """Whose environment texts and checks: ``omnilab`` (Figure 4 as printed, replies read
    tolerantly, omnilab's codes) or ``release`` (the authors' ``video_env.py`` and
    ``video_prompt.py``: their system prompt, first message, notices, strict reading, error
    codes and texts, and a media failure ends the run)."""
    delete_media_on_error: bool = False
    """Under the release's rules: after an invalid action even the newest media become their
    placeholder (the release's DELETE_MEDIA_WHEN_ERROR, which its batch evaluator sets); off:
    older media go only when newer media arrive."""
    duration_check: bool = True
    """Under the release's rules: fail an extracted clip or audio more than 5 s off the asked
    length (``video_env.py``'s check); off: only a file under 0.1 s fails (the release's
    BYPASS_DURATION_CHECK, which its batch evaluator sets)."""
    refuse_early_answer: bool | None = None
    """Refuse an answer at step 1 (EARLY_ANSWER); default: as the rules do (release: refuse,
    omnilab: accept)."""
    check_answers: bool = True
    """Refuse an answer whose form cannot be scored, so the model retries: a TR answer without
    spans, a NUM/SIZE answer without a number (the release's ANSWER_JSON_PARSE, SPAN_FORMAT,
    ANSWER_NOT_STRING under its rules; ANSWER_FORMAT under omnilab's). At the final step an
    answer is taken as it is under omnilab's rules; under the release's the run ends."""
    max_prompt_tokens: int | None = Field(default=None, ge=64)
    """End the run (TOKEN_LIMIT) once a call's prompt and reply reach this many tokens minus
    32 (the release's max_prompt_length check, read from each call's reported usage)."""
    random_resources: bool = False
    """The release's RANDOM_RESOURCE_SFT (B.3): draw K from [min(22, max_steps), max_steps],
    frames from [min(30, max_frames_len), max_frames_len] (steps of 2), clip seconds from
    [30, max(30, max_clip_len)] (steps of 2) and audio seconds from [150, max(150,
    max_audio_len)] (steps of 10), per task."""
    seed: int = 0
    """Seed of random_resources (with the task id, so reruns draw the same limits)."""
    grammar: bool | None = None
    """Constrain replies to the turn's JSON schema (response_format); default: when the model
    declares json_schema support (the local model, vLLM, SGLang, OpenAI), except under the
    release's rules, whose evaluator samples freely (its parse errors can then occur)."""
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


def randomised(options: OtaOptions, task_id: str) -> OtaOptions:
    """``options`` with the limits ``random_resources`` draws for ``task_id`` (the release's
    grids, see the option); unchanged when it is off."""
    if not options.random_resources:
        return options
    rng = random.Random(f"{options.seed}:{task_id}")  # noqa: S311 - limits, not secrets
    o = options
    steps = rng.choice(range(min(22, o.max_steps), o.max_steps + 1, 2))
    frames = rng.choice(range(min(30, o.max_frames_len), o.max_frames_len + 1, 2))
    clip = float(rng.choice(range(30, int(max(30.0, o.max_clip_len)) + 1, 2)))
    audio = float(rng.choice(range(150, int(max(150.0, o.max_audio_len)) + 1, 10)))
    update = {"max_steps": steps, "max_frames_len": frames, "max_clip_len": clip}
    return options.model_copy(update={**update, "max_audio_len": audio})


def turn_limit(options: OtaOptions, duration: float | None, max_turns: int) -> int:
    """K for a video of ``duration`` seconds: ``min_steps + ceil(duration / seconds_per_step)``
    (``floor`` with ``step_rounding="floor"``) clamped to ``[min_steps, max_steps]`` (``max_steps`` without dynamic steps or a duration),
    and never above the run's ``max_turns`` budget."""
    k = options.max_steps
    if options.dynamic_steps and duration is not None:
        low = min(options.min_steps, options.max_steps)
        per = options.seconds_per_step
        blocks = duration / (options.max_clip_len if per == "clip" else per)
        grown = low + (
            math.floor(blocks) if options.step_rounding == "floor" else math.ceil(blocks)
        )
        k = max(low, min(options.max_steps, grown))
    return max(1, min(k, max_turns))
