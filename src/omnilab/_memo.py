"""A value kept by the identity of the objects it was made from.

Agents offer the same tool-spec objects (and paper schemas) on every call of every task, and
dumping them to JSON again each time cost more than the rest of a call's bookkeeping. An
:class:`IdentityMemo` keeps what was made from a tuple of objects while it holds those objects
(so their ids cannot be reused by others), and forgets everything once it is full, for callers
that build fresh objects each time. The objects must not be changed in place after use:
frozen models and schemas loaded once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["IdentityMemo"]

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """``memo.get(objects, make)``: ``make()`` once for the same objects (by identity)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._kept: dict[tuple[int, ...], tuple[tuple[object, ...], V]] = {}

    def get(self, objects: Sequence[object], make: Callable[[], V]) -> V:
        """What ``make()`` gave for these very objects, made now if not kept."""
        ids = tuple(id(o) for o in objects)
        held = self._kept.get(ids)
        if held is not None and all(a is b for a, b in zip(held[0], objects, strict=True)):
            return held[1]
        value = make()
        if len(self._kept) >= self.size:
            self._kept.clear()
        self._kept[ids] = (tuple(objects), value)
        return value
