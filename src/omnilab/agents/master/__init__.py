"""Agent-Omni's master agent (``master``): a master model coordinating per-modality models.

Lin et al., 2025, "Agent-Omni: Test-Time Multimodal Reasoning via Model Coordination for
Understanding Anything", §2; see docs/agents-master.md.
"""

from __future__ import annotations

from omnilab.agents.master.agent import MasterAgent
from omnilab.agents.master.options import MasterOptions

__all__ = ["MasterAgent", "MasterOptions"]
