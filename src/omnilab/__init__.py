"""omnilab: a toolkit for omni-modal agents.

``omnilab.ask(["clip.mp4"], "What text appears on screen?")`` answers a question about files
with an agent (see :mod:`omnilab.api`); ``await omnilab.evaluate(config, run_dir)`` runs a
benchmark (see :mod:`omnilab.bench.runner`). Both are imported on first use, so
``import omnilab`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnilab._lazy import lazy_getattr
from omnilab._version import __version__

if TYPE_CHECKING:
    from omnilab.api import AskResult, ask, ask_async
    from omnilab.bench.runner import evaluate

__all__ = ["AskResult", "__version__", "ask", "ask_async", "evaluate"]

# Public names served lazily: name -> module that defines it.
_LAZY = {
    "ask": "omnilab.api",
    "ask_async": "omnilab.api",
    "AskResult": "omnilab.api",
    "evaluate": "omnilab.bench.runner",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
