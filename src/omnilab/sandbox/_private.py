"""Which mounts hide a run's own folders (named with :func:`omnilab.sandbox.add_private_paths`,
kept in :mod:`omnilab._private_paths`): a folder is masked whole, a file lying directly in a
system folder is hidden alone."""

from __future__ import annotations

from pathlib import Path

from omnilab._private_paths import add_private_paths, private_paths

__all__ = ["add_private_paths", "private_paths", "split_private"]


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
