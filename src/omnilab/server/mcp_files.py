"""The served folder's files as ``omnilab mcp``'s tools read them: private copies.

The folder may be writable by another user, and the server may run as root. So a tool never
opens a file of the folder by name (a check by name, then an open by name, is a race a
``renameat2`` swap wins): before each call, every input the arguments name is opened once beneath
the folder by :mod:`omnilab._wsread`'s rules (relative to the folder's descriptor, no link on any
component, non-blocking so a FIFO cannot block, regular files only) and copied from that
descriptor into a private folder (0700, the server's own), which is what the tools read. A copy
is made again only when the file changed (device, inode, size, modification time).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from omnilab import _wsread
from omnilab.inputs import InputFile, InputNotFound, InputSet
from omnilab.sandbox import remove_tree

__all__ = ["MAX_FILE_BYTES", "PrivateCopies"]

MAX_FILE_BYTES = 16 * 1024**3
"""Largest file of the folder a tool may read (a copy is made of it)."""


class PrivateCopies:
    """Private copies of the inputs of a folder, made on demand (close it to remove them)."""

    def __init__(self, root: Path, inputs: InputSet) -> None:
        self.root = root
        self.listed = inputs
        self.folder = Path(tempfile.mkdtemp(prefix="omnilab-mcp-files-"))
        self._made: dict[str, tuple[int, int, int, int]] = {}
        copies = [
            f.model_copy(update={"path": self.folder / str(n) / f.path.name})
            for n, f in enumerate(inputs)
        ]
        self.inputs = InputSet(copies)
        """The inputs the tools are given: the same ids and names, the private paths."""
        self._by_id = {f.id: f for f in copies}

    def refresh(self, names: list[str]) -> str | None:
        """Copy afresh each input named in ``names`` (ids or file names, as the tools take them)
        whose file changed; the first one that cannot be read safely, with why, else None."""
        for name in names:
            try:
                listed = self.listed.resolve(name)
            except InputNotFound:  # not an input: the tool itself says so
                continue
            problem = self._copy(listed)
            if problem is not None:
                return f"{listed.id} {problem}"
        return None

    def _copy(self, listed: InputFile) -> str | None:
        rel = listed.path.relative_to(self.root).as_posix()
        try:
            fd, st = _wsread.open_file(rel, root=self.root, max_bytes=MAX_FILE_BYTES)
        except OSError as e:
            return f"no longer leads to a file inside the folder ({e.strerror or e})"
        target = self._by_id[listed.id].path
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with os.fdopen(fd, "rb") as source:
            if self._made.get(listed.id) == stamp and target.is_file():
                return None
            target.parent.mkdir(mode=0o700, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            with tmp.open("wb") as out:  # holes as holes: a planted sparse file costs no disk
                _wsread.copy_open(source.fileno(), out, name=listed.id, max_bytes=MAX_FILE_BYTES)
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
            tmp.replace(target)
        self._made[listed.id] = stamp
        return None

    def close(self) -> None:
        """Remove the copies."""
        remove_tree(self.folder)
