"""A small on-disk JSON cache for search results and pages, with a time to live.

One file per entry under ``cache_dir/web/<kind>/``, named by the SHA-256 of its key, written to a
temporary file and renamed so that concurrent runs never read half an entry. An unreadable or
expired entry is a miss, never an error: the cache can always be deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from omnilab.config import get_settings

__all__ = ["WebCache"]


class WebCache:
    """Entries of one ``kind`` (``search``, ``pages``) that live ``ttl_s`` seconds."""

    def __init__(
        self,
        kind: str,
        *,
        enabled: bool | None = None,
        ttl_s: float | None = None,
        root: Path | None = None,
    ) -> None:
        settings = get_settings()
        self.enabled = settings.web.cache if enabled is None else enabled
        self.ttl_s = settings.web.cache_ttl_s if ttl_s is None else ttl_s
        self.folder = (root or settings.cache_dir / "web") / kind

    def _path(self, key: object) -> Path:
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return self.folder / digest[:2] / f"{digest}.json"

    def get(self, key: object) -> Any | None:
        """The value stored under ``key`` if it is younger than the TTL, else ``None``."""
        if not self.enabled:
            return None
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or time.time() - float(entry.get("created", 0)) > self.ttl_s:
            return None
        return entry.get("value")

    def put(self, key: object, value: Any) -> None:
        """Store a JSON-serialisable ``value``; a full or read-only disk only loses the entry."""
        if not self.enabled:
            return
        path = self._path(key)
        tmp: Path | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            tmp = Path(name)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"created": time.time(), "value": value}, f, ensure_ascii=False)
            tmp.replace(path)
        except OSError:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
