"""The run's own folders: what a run uses that its sandboxed code must never see, wherever it lies.

The mount plan shows the machine's system folders (``/usr``, ``/etc``, ...) read-only, so a
dataset under ``/usr/local/data``, an ``eval --out`` under ``/usr/share`` or a ``serve --runs-dir``
under ``/etc`` would be visible through them. Whoever starts a run (``omnilab eval``, ``serve``,
``ask``, the Python API) names its folders here; every sandbox started in this process afterwards
masks them (an empty read-only tmpfs over a folder; a file lying directly in a system folder reads
as empty instead). Names only accumulate: a sandbox of an earlier run in the same process keeps
them masked too, which hides nothing a run needs (its inputs are staged into the workspace).

Worker processes (``--backend processes``) get the names from their parent
(:func:`private_paths` in, :func:`add_private_paths` out).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["add_private_paths", "private_paths", "split_private"]

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


def split_private(
    paths: list[str], *, never: set[str], workspace: str
) -> tuple[list[str], list[str]]:
    """What to mask for ``paths``: (folders, files). A folder is masked whole; a file is masked
    with its folder, or hidden alone when that folder is one of the system folders ``never``
    masked (``/usr/local/data.jsonl``). Paths inside the workspace (staged copies) and paths
    that do not exist are left alone; so is a system folder itself (it cannot be masked)."""
    folders: set[str] = set()
    files: set[str] = set()
    for path in paths:
        if path == workspace or path.startswith(workspace.rstrip("/") + "/"):
            continue
        target = Path(path)
        if target.is_dir():
            if path not in never:
                folders.add(path)
        elif target.exists():
            parent = str(target.parent)
            if parent in never:
                files.add(path)
            else:
                folders.add(parent)
    return sorted(folders), sorted(files)
