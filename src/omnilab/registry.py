"""One small lazy registry for every pluggable kind: agents, tools, providers, datasets, ...

A :class:`Registry` maps a name to a value, or to ``"module:attr"`` imported on the first lookup,
so registering costs nothing and a dependency loads only when its entry is used. Third-party
packages add entries without editing omnilab through Python entry points, one group per kind::

    # the plugin's pyproject.toml
    [project.entry-points."omnilab.tools"]
    my_tool = "my_pkg.tools:my_tool"

Groups: ``omnilab.agents``, ``omnilab.tools``, ``omnilab.providers``, ``omnilab.web_providers``,
``omnilab.datasets``, ``omnilab.scorers``, ``omnilab.backends``. Entry points are read on the
first lookup of a name the registry does not hold (or a listing), and each is imported only when
its own name is asked for, so a broken plugin fails alone, with a one-line error naming its
package, and never hides the others. Entries registered in code win over entry points.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata
from typing import Any, Generic, TypeVar

from omnilab.errors import OmnilabError

__all__ = ["GROUPS", "Registry", "RegistryError", "import_target"]

T = TypeVar("T")

GROUPS: tuple[str, ...] = (
    "omnilab.agents",
    "omnilab.tools",
    "omnilab.providers",
    "omnilab.web_providers",
    "omnilab.datasets",
    "omnilab.scorers",
    "omnilab.backends",
)
"""The entry-point groups omnilab reads, one per pluggable kind."""


class RegistryError(OmnilabError):
    """An unknown name, or an entry that cannot be loaded."""


def import_target(path: str) -> Any:
    """The object at ``"package.module:attr"`` (``attr`` may be dotted: ``Class.method``).

    Raises ``ValueError`` for a path without ``:``; import errors propagate.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected 'module:attr', got {path!r}")
    value: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        value = getattr(value, part)
    return value


def _identity(value: Any) -> Any:
    return value


class Registry(Generic[T]):
    """Names to values of one kind, loaded on first use (see the module docstring).

    ``kind`` names the kind in messages (``"agent"`` gives "unknown agent 'x'; known agents:
    ..."); ``error`` builds the exception raised for a bad name (a layer's own error class);
    ``coerce`` turns a loaded object into a ``T`` (e.g. wraps a plain class in a factory) and may
    raise ``TypeError``/``ValueError`` for an object of the wrong kind.
    """

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        entries: Mapping[str, str | T] | None = None,
        error: Callable[[str], Exception] = RegistryError,
        coerce: Callable[[Any], T] = _identity,
        plural: str | None = None,
    ) -> None:
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self.group = group
        self._error = error
        self._coerce = coerce
        self._entries: dict[str, str | T] = {}
        self._loaded: dict[str, T] = {}
        self._plugins: dict[str, metadata.EntryPoint] | None = None
        self._builtin: set[str] = set()
        for name, target in (entries or {}).items():
            self.register(name, target)
        self._builtin = set(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, group={self.group!r})"

    def register(self, name: str, target: str | T) -> None:
        """Add or replace ``name``: a value, or ``"module:attr"`` imported on first lookup."""
        if isinstance(target, str) and ":" not in target:
            raise ValueError(f"{self.kind} {name!r}: expected 'module:attr', got {target!r}")
        self._entries[name] = target
        self._loaded.pop(name, None)
        self._builtin.discard(name)

    def __setitem__(self, name: str, target: str | T) -> None:
        self.register(name, target)

    def unregister(self, name: str) -> None:
        """Forget ``name`` if it was registered in code (entry points stay visible)."""
        self._entries.pop(name, None)
        self._loaded.pop(name, None)

    def refresh(self) -> None:
        """Read the entry points again (after installing a plugin into a running process)."""
        self._plugins = None
        self._loaded = {n: v for n, v in self._loaded.items() if n in self._entries}

    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        if self._plugins is None:
            found: dict[str, metadata.EntryPoint] = {}
            if self.group is not None:
                for ep in metadata.entry_points(group=self.group):
                    # The first distribution on sys.path wins, as for imports.
                    found.setdefault(ep.name, ep)
            self._plugins = found
        return self._plugins

    def names(self, *, plugins: bool = True) -> list[str]:
        """Every name: those registered in code, in order, then entry points, sorted
        (``plugins=False`` leaves them out and reads no package metadata)."""
        if not plugins:
            return list(self._entries)
        found = sorted(n for n in self._entry_points() if n not in self._entries)
        return [*self._entries, *found]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._entries or name in self._entry_points())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def source(self, name: str) -> str:
        """Where ``name`` comes from: ``"module:attr"``, ``"entry point of PKG"``, ``"built-in"``
        or ``"registered in code"``."""
        target = self._entries.get(name)
        if target is None and name not in self._entries:
            ep = self._entry_points().get(name)
            if ep is None:
                raise self.unknown(name)
            return f"entry point of {_dist_name(ep)}"
        if isinstance(target, str):
            return target
        return "built-in" if name in self._builtin else "registered in code"

    def unknown(self, name: str) -> Exception:
        """The error for a name that is not registered, listing the known ones."""
        known = ", ".join(self.names()) or "none"
        return self._error(f"unknown {self.kind} {name!r}; known {self.plural}: {known}")

    def get(self, name: str) -> T:
        """The value of ``name``, imported on first lookup; raises ``error`` for an unknown name
        or an entry that cannot be loaded (the message names the plugin package)."""
        if name in self._loaded:
            return self._loaded[name]
        if name in self._entries:
            target = self._entries[name]
            where = target if isinstance(target, str) else self.source(name)
            load: Callable[[], Any] = (
                (lambda: import_target(target)) if isinstance(target, str) else (lambda: target)
            )
        else:
            ep = self._entry_points().get(name)
            if ep is None:
                raise self.unknown(name)
            where = f"{ep.value}, entry point of {_dist_name(ep)}"
            load = ep.load
        try:
            value = self._coerce(load())
        except Exception as e:
            # Anything a plugin can raise on import: one line naming the entry and its package.
            raise self._error(
                f"{self.kind} {name!r} cannot be loaded ({where}): {type(e).__name__}: {e}"
            ) from e
        self._loaded[name] = value
        return value


def _dist_name(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(dist.name) if dist is not None else "an installed package"
