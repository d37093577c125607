"""Where the perception tools put the files they derive (frames, crops, audio segments).

The file a model is shown always lives in the media cache, which sandboxed code cannot write:
a path inside the workspace could be swapped for a link to any file between the moment the
harness writes it and the moment a provider reads it. When the task has a workspace, a copy goes
to ``workspace/perception/`` for the task's code, written without following links
(:func:`omnilab.sandbox.place_file`): a link the code planted there is replaced, never followed.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from PIL import Image as PILImage

from omnilab.inputs import InputFile
from omnilab.media.audio import audio_segment
from omnilab.media.cache import MediaCache
from omnilab.sandbox import open_folder, place_file

__all__ = ["MediaStore", "safe_name"]

log = logging.getLogger("omnilab.tools")

_JPEG_QUALITY = 90
_FOLDER = ("perception",)


def safe_name(name: str) -> str:
    """``name`` with anything but letters, digits, ``_.-`` replaced (one path component)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "_"


class MediaStore:
    """Derived media in the media cache, each mirrored into ``workspace/perception/``."""

    def __init__(self, workspace: Path | None) -> None:
        self.workspace = Path(workspace) if workspace is not None else None
        self.folder = self.workspace / "perception" if self.workspace is not None else None
        """Where the task's code finds copies (None without a workspace)."""

    def save(
        self,
        source: Path,
        op: str,
        params: dict[str, object],
        name: str,
        produce: Callable[[Path], None],
    ) -> Path:
        """The file for ``op(source, **params)``, written by ``produce(path)`` when missing."""
        cache = MediaCache.default()
        path = cache.get_or_create(cache.key(source, op, params), Path(name).suffix, produce)
        self._mirror(path, name)
        return path

    def image(
        self, source: Path, op: str, params: dict[str, object], name: str, image: PILImage.Image
    ) -> Path:
        """:meth:`save` for a picture: JPEG (quality 90) or PNG, as ``name`` ends."""
        fmt = "PNG" if name.lower().endswith(".png") else "JPEG"

        def write(dest: Path) -> None:
            if fmt == "JPEG":
                image.save(dest, format=fmt, quality=_JPEG_QUALITY)
            else:
                image.save(dest, format=fmt)

        return self.save(source, op, params, name, write)

    def audio(self, f: InputFile, start: float, end: float) -> Path:
        """The 16 kHz mono WAV of ``[start, end)`` of ``f``."""
        path = audio_segment(f.path, start, end)
        self._mirror(path, f"{f.id}_{start:g}-{end:g}s.wav")
        return path

    def _mirror(self, path: Path, name: str) -> None:
        if self.workspace is None:
            return
        target = safe_name(name)
        try:
            if not self._has_copy(target, path.stat().st_size):
                # The runner leaves a task's workspace to be made by what first uses it.
                self.workspace.mkdir(parents=True, exist_ok=True)
                place_file(self.workspace, _FOLDER, target, path)
        except OSError as exc:
            # A link planted where the folder should be, a full workspace: the model still gets
            # the file; only the code's copy is missing.
            log.warning("could not copy %s into the workspace: %s", target, exc)

    def _has_copy(self, name: str, size: int) -> bool:
        assert self.workspace is not None
        try:
            with open_folder(self.workspace, _FOLDER) as fd:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_size == size
