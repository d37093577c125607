"""Ids for events, runs and tool calls: 128 random bits as 32 hex digits, cheap to make.

Every event of every trajectory gets one (a dozen per task), so ``uuid.uuid4()`` (a system call
per id, which cost a measurable share of a 1,000-task run on a loaded machine) is replaced by a
generator seeded once from the system's randomness. The ids need to be unique, not secret; a
forked child reseeds so parent and child never draw the same sequence.
"""

from __future__ import annotations

import os
import random

__all__ = ["new_id"]

_RNG = random.Random()  # noqa: S311 - unique ids, not secrets


def _reseed() -> None:
    _RNG.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def new_id() -> str:
    """A fresh 32-hex-digit id (the shape of ``uuid.uuid4().hex``)."""
    return f"{_RNG.getrandbits(128):032x}"
