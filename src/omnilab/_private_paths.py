"""The run's own folders: what a run uses that its sandboxed code must never see, wherever it lies.

The sandbox shows the machine's system folders (``/usr``, ``/etc``, ...) read-only, so a dataset
under ``/usr/local/data``, an ``eval --out`` under ``/usr/share`` or a ``serve --runs-dir`` under
``/etc`` would be visible through them. Whoever starts a run (``omnilab eval``, ``serve``, ``ask``,
the Python API) names its folders here; every sandbox started in this process afterwards masks
them (see :mod:`omnilab.sandbox._private`). Names only accumulate: a sandbox of an earlier run in
the same process keeps them masked too, which hides nothing a run needs (its inputs are staged
into the workspace).

A small base module (standard library only), so that naming a folder does not import the
sandbox: ``omnilab eval`` starts without it. Worker processes (``--backend processes``) get the
names from their parent (:func:`private_paths` in, :func:`add_private_paths` out).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["add_private_paths", "private_paths"]

_LOCK = threading.Lock()
_PATHS: set[str] = set()


def add_private_paths(*paths: str | Path | None) -> None:
    """Masks ``paths`` (files or folders; ``None`` is skipped) in every sandbox this process
    starts from now on: the dataset file and its folder, the media root, the run folder, a
    server's runs and upload folders, a report folder. Relative paths are taken from the
    current folder; links are resolved (the mask must cover what the name reaches)."""
    found = {os.path.realpath(Path(p).expanduser()) for p in paths if p is not None and str(p)}
    with _LOCK:
        _PATHS.update(found)


def private_paths() -> list[str]:
    """The paths named so far, sorted (for ``omnilab doctor`` and worker processes)."""
    with _LOCK:
        return sorted(_PATHS)
