"""Imports put off: names of a package imported on first use (PEP 562), so importing the
package stays light, and a module imported in the background before it is needed."""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["import_in_background", "lazy_getattr"]


def lazy_getattr(
    package: str, where: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each name of ``where`` (name -> module defining it)
    from its module on first access, then from ``namespace`` (the package's globals)."""

    def load(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups skip this function
        return value

    return load


def import_in_background(name: str) -> None:
    """Start importing module ``name`` in a daemon thread (nothing if it is loaded), so that a
    later ``import`` finds it done, or waits for the rest; a failure is left for that import to
    raise."""
    if name in sys.modules:
        return

    def load() -> None:
        with contextlib.suppress(Exception):
            importlib.import_module(name)

    threading.Thread(target=load, name=f"omnilab-import-{name}", daemon=True).start()
