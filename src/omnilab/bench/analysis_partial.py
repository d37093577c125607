"""An error analysis's labels saved as they come (``analysis.partial.jsonl``), so a stopped
``omnilab analyze`` keeps what the analyst said and the next run by the same analyst reuses it.
Each line is ``{"analyst": NAME, "label": TaskErrorLabels}``; a cut-off last line is skipped."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from types import TracebackType
from typing import IO

from pydantic import ValidationError

from omnilab import _wsread
from omnilab._ownfolders import open_new
from omnilab.bench.analysis import TaskErrorLabels
from omnilab.bench.errors import BenchError

__all__ = ["PartialLabels", "read_partial_labels"]


def read_partial_labels(path: Path, analyst: str) -> dict[tuple[str, int], TaskErrorLabels]:
    """The labels ``analyst`` gave in an earlier, unfinished analysis (none if there was none).
    Read as the run's other files are (no link followed, no FIFO, in a run marked untrusted)."""
    try:
        lines = _wsread.read_bytes(path).decode("utf-8", errors="replace").splitlines()
    except OSError as e:
        if e.errno == errno.ENOENT:
            return {}
        raise BenchError(f"cannot read {path}: {e.strerror or e}") from None
    known: dict[tuple[str, int], TaskErrorLabels] = {}
    for line in lines:
        try:
            entry = json.loads(line)
            label = TaskErrorLabels.model_validate(entry["label"])
        except (ValueError, KeyError, TypeError, ValidationError):
            continue  # a line cut off by the stop, or not ours
        if entry.get("analyst") == analyst:
            known[(label.task_id, label.sample)] = label
    return known


class PartialLabels:
    """Appends each new label to the file, flushed (labels already in ``known`` are not)."""

    def __init__(self, path: Path, analyst: str, known: dict[tuple[str, int], TaskErrorLabels]):
        self.path = path
        self.analyst = analyst
        self.known = known
        self._file: IO[str] | None = None

    def __enter__(self) -> PartialLabels:
        try:
            self._file = open_new(self.path, append=True)  # a link at its name is refused
        except OSError as e:
            raise BenchError(f"cannot write {self.path}: {e.strerror or e}") from None
        return self

    def add(self, label: TaskErrorLabels) -> None:
        """Save ``label`` unless it came from the file."""
        if self._file is None or self.known.get((label.task_id, label.sample)) is label:
            return
        entry = {"analyst": self.analyst, "label": label.model_dump(mode="json")}
        self._file.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._file.flush()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._file is not None:
            self._file.close()
