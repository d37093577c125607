"""Options of the ``master`` agent (``get_agent("master", **options)``, ``-O key=value``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from omnilab.models.types import GenerateConfig

__all__ = ["MasterOptions"]


class MasterOptions(BaseModel):
    """Options of the ``master`` agent."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    max_rounds: int = Field(default=3, ge=1, le=20)
    """Most master loops L (reasoning, execution, decision); the paper's default is 3. A
    decision with ``is_final`` true ends the loop earlier."""
    perception: bool = True
    """Run the perception stage (a JSON summary of each input) before the first round."""
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    """Sampling settings of every call (``max_tokens`` caps each reply); each stage adds its
    own ``response_format``."""
