"""Backends registered by name and imported only when first used.

A registry maps a name to ``"module:factory"`` (or to a factory callable). Factories take no
arguments and read what they need from settings; the instance is kept per name and settings so
models load once per process yet a test that changes a setting gets a fresh one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Generic, TypeVar

from omnilab.config import get_settings
from omnilab.perception.errors import PerceptionError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Named backends of one kind (``what``: e.g. "ASR backend"); ``setting`` picks the default."""

    def __init__(self, what: str, setting: str) -> None:
        self.what = what
        self.setting = setting
        self._targets: dict[str, str | Callable[[], T]] = {}
        self._instances: dict[tuple[str, str], T] = {}

    def register(self, name: str, target: str | Callable[[], T]) -> None:
        """Add (or replace) backend ``name``: a ``"module:factory"`` path or a factory."""
        self._targets[name] = target
        self._instances = {k: v for k, v in self._instances.items() if k[0] != name}

    def names(self) -> list[str]:
        """Registered backend names, sorted."""
        return sorted(self._targets)

    def default_name(self) -> str:
        """The backend named by the setting ``perception.<setting>``."""
        return str(getattr(get_settings().perception, self.setting))

    def check(self, name: str | None = None) -> str:
        """The backend name to use (default: the configured one); raises if it is unknown."""
        chosen = name or self.default_name()
        if chosen not in self._targets:
            known = ", ".join(self.names())
            raise PerceptionError(
                f"unknown {self.what} '{chosen}' (known: {known}); "
                f"pick one with the option or perception.{self.setting}"
            )
        return chosen

    def get(self, name: str | None = None) -> T:
        """The backend instance called ``name`` (default: the configured one)."""
        chosen = self.check(name)
        target = self._targets[chosen]
        # Settings are part of the key: a changed model path or threshold builds a new instance.
        key = (chosen, get_settings().perception.model_dump_json())
        if key not in self._instances:
            self._instances[key] = self._factory(target)()
        return self._instances[key]

    def clear(self) -> None:
        """Drop loaded instances (their models are freed when nothing else holds them)."""
        self._instances.clear()

    @staticmethod
    def _factory(target: str | Callable[[], T]) -> Callable[[], T]:
        if callable(target):
            return target
        module_name, _, attr = target.partition(":")
        factory: Callable[[], T] = getattr(importlib.import_module(module_name), attr)
        return factory
