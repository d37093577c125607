"""The run folder: its layout, its config file, and a results log that survives a crash.

::

    <run>/
      run.json                 RunConfig: what was run (dataset, agent, models, judge, seed, ...)
      results.jsonl            one TaskResult per finished task, appended as each finishes
      trajectories/<id>.jsonl  the event stream of each task
      workspaces/<id>/         files an agent left in its workspace (empty ones are removed)
      metrics.json             the RunSummary of results.jsonl
      scores/<name>.jsonl      the results re-scored by another scorer or judge
      scores/<name>.json       what that re-scoring used
      scores/<name>.metrics.json
      analysis.json            error analysis of the failed tasks

A task id becomes a file name by :func:`file_stem`. Nothing here talks to a model.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from omnilab import __version__
from omnilab.agents.base import Budgets
from omnilab.bench.errors import BenchError
from omnilab.bench.results import TaskResult, read_results
from omnilab.bench.task import Task

__all__ = [
    "RUN_SCHEMA_VERSION",
    "ResultLog",
    "RunConfig",
    "RunDir",
    "Selection",
    "file_stem",
    "load_results",
    "redact_url",
    "repair_tail",
    "sha256_file",
    "write_atomic",
]

RUN_SCHEMA_VERSION = 1

_SAFE_STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")

# Fields whose change would mix results of different experiments in one file.
_IDENTITY = (
    "dataset",
    "data",
    "data_sha256",
    "media_root",
    "agent",
    "agent_options",
    "model",
    "roles",
    "tools",
    "budgets",
    "task_timeout_s",
    "scorer",
    "judges",
    "seed",
)


def file_stem(task_id: str) -> str:
    """A file name for ``task_id``: the id itself when it is safe, else a cleaned form plus a
    short hash of the id, so two ids never share a file (``a/b`` and ``a_b`` differ)."""
    if _SAFE_STEM.match(task_id):
        return task_id
    cleaned = _UNSAFE_CHARS.sub("_", task_id).strip("._")[:100] or "task"
    digest = hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:10]
    return f"{cleaned}-{digest}"


def redact_url(name: str) -> str:
    """A model name with any ``user:password@`` in its URL replaced, so run.json holds no key."""
    return _USERINFO.sub("***@", name)


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file's bytes (the dataset file, so an edited file is noticed on resume)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Selection(BaseModel):
    """Which tasks of the dataset a run covers: filters, then the first ``limit`` in file order."""

    levels: list[str] = Field(default_factory=list)
    """Keep tasks of these Levels (compared ignoring case); empty keeps all."""
    categories: list[str] = Field(default_factory=list)
    """Keep tasks of these categories (compared ignoring case); empty keeps all."""
    ids: list[str] = Field(default_factory=list)
    """Keep only these task ids; empty keeps all."""
    limit: int | None = Field(default=None, ge=1)

    def apply(self, tasks: Sequence[Task]) -> list[Task]:
        """The selected tasks, in dataset order. Unknown ids raise :class:`BenchError`."""
        levels = {v.casefold() for v in self.levels}
        categories = {v.casefold() for v in self.categories}
        if self.ids:
            known = {t.id for t in tasks}
            unknown = [i for i in self.ids if i not in known]
            if unknown:
                shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                raise BenchError(f"no task with id {shown} in the dataset; check --ids")
        wanted = set(self.ids)
        chosen = [
            t
            for t in tasks
            if (not levels or (t.metadata.level or "").casefold() in levels)
            and (not categories or (t.metadata.category or "").casefold() in categories)
            and (not wanted or t.id in wanted)
        ]
        return chosen[: self.limit] if self.limit is not None else chosen


class RunConfig(BaseModel):
    """What a run is: enough to repeat it, and to refuse resuming it with something else.

    Model names are stored as given (``provider:model[@url]``, credentials in URLs masked);
    API keys are never part of a name and never stored.
    """

    schema_version: int = RUN_SCHEMA_VERSION
    dataset: str
    data: Path
    """The dataset file, absolute."""
    data_sha256: str = ""
    media_root: Path | None = None
    """The media folder the dataset's paths resolved against, absolute."""
    agent: str
    agent_options: dict[str, Any] = Field(default_factory=dict)
    model: str
    roles: dict[str, str] = Field(default_factory=dict)
    """Further models the agent uses, by role (``audio_qa``, ``vision_qa``, ...)."""
    tools: list[str] | None = None
    """Tools the agent may call; ``None`` is the agent's own default set."""
    budgets: Budgets = Field(default_factory=Budgets)
    task_timeout_s: float | None = None
    """Hard limit on one task's agent run; past it the task fails with a timeout."""
    scorer: str
    judges: list[str] = Field(default_factory=list)
    seed: int = 0
    selection: Selection = Field(default_factory=Selection)
    backend: str = "local"
    concurrency: int | None = Field(default=None, ge=1)
    """Tasks at once when the run was last started (a resumed run keeps it unless told)."""
    omnilab_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def differences(self, other: RunConfig) -> list[str]:
        """What differs between two configs in a way that would mix results, one entry each:
        ``model: scripted:a.json (stored) vs scripted:b.json (now)``."""
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        keys = list(_IDENTITY)
        if self.data_sha256 and self.data_sha256 == other.data_sha256:
            keys.remove("data")  # the same file moved elsewhere is the same dataset
        return [
            f"{key}: {_short(mine[key])} (stored) vs {_short(theirs[key])} (now)"
            for key in keys
            if mine[key] != theirs[key]
        ]


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


class RunDir:
    """Paths inside one run folder, and reading what a run wrote."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def config_file(self) -> Path:
        """``run.json``."""
        return self.path / "run.json"

    @property
    def results_file(self) -> Path:
        """``results.jsonl``."""
        return self.path / "results.jsonl"

    @property
    def metrics_file(self) -> Path:
        """``metrics.json``."""
        return self.path / "metrics.json"

    @property
    def analysis_file(self) -> Path:
        """``analysis.json``."""
        return self.path / "analysis.json"

    @property
    def scores_dir(self) -> Path:
        """``scores/``."""
        return self.path / "scores"

    def trajectory_file(self, task_id: str) -> Path:
        """``trajectories/<id>.jsonl``."""
        return self.path / "trajectories" / f"{file_stem(task_id)}.jsonl"

    def workspace(self, task_id: str) -> Path:
        """``workspaces/<id>/``."""
        return self.path / "workspaces" / file_stem(task_id)

    def scores_file(self, name: str) -> Path:
        """``scores/<name>.jsonl``."""
        return self.scores_dir / f"{name}.jsonl"

    def is_run(self) -> bool:
        """Whether the folder holds a run (its ``run.json``)."""
        return self.config_file.is_file()

    def read_config(self) -> RunConfig:
        """The stored config; :class:`BenchError` if the folder holds no run or a broken one."""
        if not self.config_file.is_file():
            raise BenchError(f"{self.path} is not a run folder (no run.json); check the path")
        try:
            return RunConfig.model_validate_json(self.config_file.read_text(encoding="utf-8"))
        except (OSError, ValidationError) as e:
            raise BenchError(f"cannot read {self.config_file}: {_first_line(e)}") from None

    def write_config(self, config: RunConfig) -> None:
        """Store ``config`` atomically (a crash leaves the old file or the new one)."""
        try:
            write_atomic(self.config_file, config.model_dump_json(indent=2) + "\n")
        except OSError as e:
            raise BenchError(f"cannot write {self.config_file}: {e.strerror or e}") from None

    def results(self) -> list[TaskResult]:
        """The results of ``results.jsonl`` (none if it does not exist), one per task."""
        if not self.results_file.exists():
            return []
        return load_results(self.results_file)


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, fsync it and rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def load_results(path: Path) -> list[TaskResult]:
    """The results of a JSON Lines file, one per task id: where a task repeats (a file written
    by hand or merged), the last record wins, in the position of the first."""
    by_id: dict[str, TaskResult] = {}
    for result in read_results(path):
        by_id[result.task_id] = result
    return list(by_id.values())


def repair_tail(path: Path) -> bool:
    """Cut a partial last line (a process killed mid-write) so that appending starts on a fresh
    line; returns whether anything was cut."""
    if not path.exists():
        return False
    size = path.stat().st_size
    if size == 0:
        return False
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return False
        # Walk back block by block to the last newline; results are a few KB each.
        end = size
        while end > 0:
            start = max(0, end - 65536)
            f.seek(start)
            block = f.read(end - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                f.truncate(start + cut + 1)
                return True
            end = start
        f.truncate(0)
        return True


class ResultLog:
    """Appends results to ``results.jsonl``, one line per task.

    Each line is written and flushed at once, so a killed process loses nothing that was
    appended; ``fsync`` runs in a worker thread after every append (appends made while one runs
    share the next), so a slow disk never stalls the event loop. Open with ``async with``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repaired = False
        """Whether a cut-off last line was removed on opening."""
        self._file: Any = None
        self._dirty = asyncio.Event()
        self._closing = False
        self._syncer: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ResultLog:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.repaired = repair_tail(self.path)
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as e:
            raise BenchError(f"cannot write results to {self.path}: {e.strerror or e}") from None
        self._syncer = asyncio.create_task(self._sync_loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def append(self, result: TaskResult) -> None:
        """Write one result line now (the fsync follows in the background)."""
        if self._file is None:
            raise RuntimeError("ResultLog is not open")
        self._file.write(result.model_dump_json() + "\n")
        self._file.flush()
        self._dirty.set()

    async def _sync_loop(self) -> None:
        fd = self._file.fileno()
        while not self._closing:
            await self._dirty.wait()
            self._dirty.clear()
            await asyncio.to_thread(os.fsync, fd)

    async def aclose(self) -> None:
        """Fsync what was written and close the file (also while the run is being cancelled)."""
        if self._file is None:
            return
        self._closing = True
        self._dirty.set()
        if self._syncer is not None:
            # Let the syncer finish its fsync rather than cancel it: a cancelled to_thread
            # leaves the thread running on a descriptor about to be closed.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._syncer)
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
