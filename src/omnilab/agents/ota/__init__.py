"""``ota``: OmniAgent's Observation-Thought-Action agent (papers/002, Algorithm 1, B.2-B.5).

``get_agent("ota", max_steps=32, max_frames_len=60, ...)``; see :mod:`.agent` for the loop,
:mod:`.protocol` for the reply format and error codes, :mod:`.env` for the media environment and
:mod:`.memory` for the placeholders of B.4.
"""

from __future__ import annotations

from omnilab.agents.ota.agent import OtaAgent
from omnilab.agents.ota.options import OtaOptions, turn_limit
from omnilab.agents.ota.protocol import ERROR_CODES

__all__ = ["ERROR_CODES", "OtaAgent", "OtaOptions", "turn_limit"]
