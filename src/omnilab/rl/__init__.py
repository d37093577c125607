"""The rollout side of RL trainers: token-exact rollouts of omnilab's agents
(:func:`rollout`, :class:`Rollout`), and the papers' rewards and advantages as trainer functions
(:mod:`omnilab.rl.rewards`)."""

from omnilab.rl.rollout import Rollout, rollout, rollouts_of_run
from omnilab.rl.sequences import TokenSequence, TrajectoryTokenError, sequences

__all__ = [
    "Rollout",
    "TokenSequence",
    "TrajectoryTokenError",
    "rollout",
    "rollouts_of_run",
    "sequences",
]
