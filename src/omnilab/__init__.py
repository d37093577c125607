"""omnilab: a toolkit for omni-modal agents."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0.dev0"
