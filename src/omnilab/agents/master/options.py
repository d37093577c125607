"""Options of the ``master`` agent (``get_agent("master", **options)``, ``-O key=value``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnilab.models.types import GenerateConfig

__all__ = ["MasterOptions"]


class MasterOptions(BaseModel):
    """Options of the ``master`` agent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_rounds: int = Field(default=3, ge=1, le=20)
    """Most master loops L (reasoning, execution, decision); the paper's default is 3. A
    decision with ``is_final`` true ends the loop earlier."""
    perception: bool = True
    """Run the perception stage (a JSON summary of each input) before the first round."""
    rules: Literal["omnilab", "release"] = "omnilab"
    """Whose stage texts and calls: ``omnilab`` (Figures 4-7 as printed, JSON summaries and
    answers, the schema as ``response_format``) or ``release`` (huawei-lin/Agent-Omni
    ``src/nodes.py`` and ``src/subagents/*``: its prompt texts and variable rendering, one
    free-text call per sub-question and per summary with its media, the schema in the prompt
    only, replies read by LangChain's parser, an unparsable reply repaired by LangChain's fixing
    prompt and the call made again, agents missing from the pool skipped)."""
    format_instructions: bool = True
    """Append the output parser's format instructions (the schema with its field descriptions)
    to the reasoning and decision system prompts, as the release does; under omnilab's rules
    the schema also goes as ``response_format``."""
    all_rounds: bool = False
    """Run all ``max_rounds`` rounds whatever ``is_final`` says (the release's graph.py, whose
    is_final test is commented out); off: a final decision ends the loop (the paper's §2)."""
    format_retries: int = Field(default=1, ge=0, le=20)
    """Extra tries a stage gets after a reply that is not valid JSON for its schema, each with
    the problem stated; then the reply is recorded as a format error. The authors' README
    configures ``retry_times: 10``."""
    max_image_input: int | None = Field(default=None, ge=1)
    """Under the release's rules: most images or video frames one call carries (the release's
    model config ``max_image_input``: 20 for Claude, 6 in its example config). The image agent
    sends only its first batch, the video agent each batch in a call of its own, the replies
    joined; unset: all in one call."""
    max_frames_num: int = Field(default=60, ge=1)
    """Under the release's rules: most frames of a video (one a second, else evenly spread),
    each stretched to 336x336 (the release's ``sample_frames`` default)."""
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    """Sampling settings of every call (``max_tokens`` caps each reply); each stage adds its
    own ``response_format``."""
    role_generate: dict[str, GenerateConfig] = Field(default_factory=dict)
    """Sampling settings of one role's calls (``master``, ``text``, ``image``, ``video``,
    ``audio``), set fields over ``generate``: ``{"video": {"max_tokens": 2048}}``."""

    def generate_for(self, role: str) -> GenerateConfig:
        """``generate`` with the fields ``role_generate[role]`` sets on top."""
        override = self.role_generate.get(role)
        if override is None:
            return self.generate
        return self.generate.model_copy(update=override.model_dump(exclude_unset=True))
