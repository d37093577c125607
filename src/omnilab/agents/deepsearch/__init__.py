"""The Omni-DeepSearch scaffold (``deepsearch``): audio-driven search over text, images and
videos under a per-tool search budget, with the paper's Appendix D prompt and tool schemas."""

from __future__ import annotations

from omnilab.agents.deepsearch.agent import DeepSearchAgent, DeepSearchOptions

__all__ = ["DeepSearchAgent", "DeepSearchOptions"]
