"""The run folder: its layout, its config file, and a results log that survives a crash.

::

    <run>/
      run.json                 RunConfig: what was run (dataset, agent, models, judge, seed, ...)
      results.jsonl            one TaskResult per finished task and sample, appended as each finishes
      trajectories/<id>.jsonl  the event stream of each task (sample 0)
      trajectories/<id>~<k>.jsonl  the event stream of sample k > 0 (``--samples``)
      workspaces/<id>[~<k>]/   files an agent left in its workspace (empty ones are removed)
      metrics.json             the RunSummary of results.jsonl
      scores/<name>.jsonl      the results re-scored by another scorer or judge
      scores/<name>.json       what that re-scoring used
      scores/<name>.metrics.json
      analysis.json            error analysis of the failed tasks

A task id becomes a file name by :func:`file_stem`. Nothing here talks to a model.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from omnilab import _wsread
from omnilab._atomic import write_atomic
from omnilab._ownfolders import private_folder
from omnilab._trust import foreign_writer
from omnilab._version import __version__
from omnilab.agents.base import Budgets
from omnilab.bench.errors import BenchError
from omnilab.bench.result_log import ResultLog, repair_tail
from omnilab.bench.results import TaskResult, read_results
from omnilab.bench.scoring.judging import ScoringRules
from omnilab.bench.task import Task
from omnilab.models import ModelConfigError, parse_model_name

__all__ = [
    "RUN_SCHEMA_VERSION",
    "ConfigChange",
    "MissingMedia",
    "ResultLog",
    "RunConfig",
    "RunDir",
    "Selection",
    "file_stem",
    "load_results",
    "model_identity",
    "redact_url",
    "repair_tail",
    "sample_stem",
    "sha256_file",
    "write_atomic",
]

RUN_SCHEMA_VERSION = 1

_SAFE_STEM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_QUERY_VALUE = re.compile(r"(?<=[?&])([^=&#\s]+)=[^&#\s]*")

MissingMedia = Literal["fail", "drop"]
"""What a run does with a task whose input files are missing (see ``RunConfig.missing_media``)."""

# Fields whose change would mix results of different experiments in one file.
_IDENTITY = (
    "dataset",
    "data",
    "data_sha256",
    "media_root",
    "media_url",
    "allow_outside_media_root",
    "agent",
    "agent_options",
    "model",
    "roles",
    "tools",
    "budgets",
    "scorer",
    "scoring_rules",
    "judges",
    "seed",
    "search",
    "missing_media",
)
# Fields a resumed run may change: where the model is served and how fast the run goes. Keys are
# never stored, so a new key is no change at all.
_OPERATIONAL = ("model", "roles", "judges", "task_timeout_s", "concurrency", "backend", "cache")
# Model names compare without their endpoint: the same model served elsewhere gives the same
# results, another model does not.
_NAMED_MODELS = ("model", "roles", "judges")


def model_identity(name: str) -> str:
    """``provider:model`` without the ``@base_url`` (a resumed run may move the endpoint)."""
    try:
        parsed = parse_model_name(name)
    except ModelConfigError:
        return name
    return f"{parsed.provider}:{parsed.model}"


def _identity_value(key: str, value: Any) -> Any:
    if key == "model":
        return model_identity(value)
    if key == "roles":
        return {k: model_identity(v) for k, v in value.items()}
    if key == "judges":
        return [model_identity(v) for v in value]
    return value


def file_stem(task_id: str) -> str:
    """A file name for ``task_id``: the id itself when it is safe, else a cleaned form plus a
    short hash of the id, so two ids never share a file (``a/b`` and ``a_b`` differ)."""
    if _SAFE_STEM.match(task_id):
        return task_id
    cleaned = _UNSAFE_CHARS.sub("_", task_id).strip("._")[:100] or "task"
    digest = hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:10]
    return f"{cleaned}-{digest}"


def sample_stem(task_id: str, sample: int) -> str:
    """The file stem of one sample of a task: ``file_stem(id)``, with ``~k`` for sample k > 0
    (``~`` never occurs in a stem, so no task id collides with another's sample)."""
    stem = file_stem(task_id)
    return stem if sample == 0 else f"{stem}~{sample}"


def redact_url(name: str) -> str:
    """A model name with any ``user:password@`` and every query value (``?api-key=...``) in its URL
    replaced, so run.json holds no key."""
    return _QUERY_VALUE.sub(r"\1=***", _USERINFO.sub("***@", name))


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


class ConfigChange(BaseModel):
    """What a resumed run changed in the config (endpoint, concurrency, timeouts), and when."""

    at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    changes: list[str]
    """One entry per field: ``concurrency: 8 -> 32``."""


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
    data_url: str | None = None
    """Where ``data`` was fetched from, when ``--data`` was a URL (without query or user info;
    ``data`` is then the local copy in the media cache)."""
    media_url: str | None = None
    """The media root when it is a URL (without query or user info): each task fetches its
    inputs beneath it where it runs."""
    allow_outside_media_root: bool = False
    """``--allow-outside-media-root``: the dataset's absolute and ``..`` paths were taken as
    written, and its full URLs outside a media root URL fetched (by default both are refused;
    see :func:`omnilab.bench.load_dataset`)."""
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
    scoring_rules: ScoringRules | None = None
    """The judged scorer's rules when not its own defaults (a protocol preset sets them)."""
    protocol: str | None = None
    """The reproduction preset the run follows (``--protocol``), if any."""
    search: str | None = None
    """The web search provider chosen for the run (``--search``); ``None``: the setting
    ``web.search_provider``."""
    missing_media: MissingMedia = "fail"
    """A task whose input files are missing: ``fail`` it (omnilab's default), or ``drop`` the
    missing files and run it with the rest (what OmniGAIA's released code does)."""
    judges: list[str] = Field(default_factory=list)
    seed: int = 0
    selection: Selection = Field(default_factory=Selection)
    backend: str = "local"
    concurrency: int | None = Field(default=None, ge=1)
    """Tasks at once when the run was last started (a resumed run keeps it unless told)."""
    samples: int = Field(default=1, ge=1)
    """Rollouts per task (``--samples K``); each has its own seed, result and trajectory."""
    cache: bool = True
    """Whether model replies are cached (a rerun of a finished call asks nothing)."""
    omnilab_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    changes: list[ConfigChange] = Field(default_factory=list)
    """Operational changes made by resumed runs (endpoint, concurrency, timeouts), oldest first."""
    header: dict[str, Any] | None = None
    """The run header printed when the run last started (agent, mode, tools, limits, ...)."""

    def differences(self, other: RunConfig) -> list[str]:
        """What differs between two configs in a way that would mix results, one entry each:
        ``model: scripted:a.json (stored) vs scripted:b.json (now)``. Model names compare
        without their ``@base_url``."""
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        keys = list(_IDENTITY)
        if self.data_sha256 and self.data_sha256 == other.data_sha256:
            keys.remove("data")  # the same file moved elsewhere is the same dataset
        return [
            f"{key}: {_short(mine[key])} (stored) vs {_short(theirs[key])} (now)"
            for key in keys
            if _identity_value(key, mine[key]) != _identity_value(key, theirs[key])
        ]

    def operational_changes(self, other: RunConfig) -> list[str]:
        """What ``other`` changes that a resumed run may change (endpoint URLs, concurrency,
        timeouts, backend, cache), one entry each: ``concurrency: 8 -> 32``."""
        mine, theirs = self.model_dump(mode="json"), other.model_dump(mode="json")
        return [
            f"{key}: {_short(mine[key])} -> {_short(theirs[key])}"
            for key in _OPERATIONAL
            if mine[key] != theirs[key]
        ]


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


class RunDir:
    """Paths inside one run folder, and reading what a run wrote."""

    def __init__(self, path: str | Path) -> None:
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

    def trajectory_file(self, task_id: str, sample: int = 0) -> Path:
        """``trajectories/<id>.jsonl`` (sample 0), ``trajectories/<id>~<k>.jsonl`` (sample k)."""
        return self.path / "trajectories" / f"{sample_stem(task_id, sample)}.jsonl"

    def workspace(self, task_id: str, sample: int = 0) -> Path:
        """``workspaces/<id>/`` (sample 0), ``workspaces/<id>~<k>/`` (sample k)."""
        return self.path / "workspaces" / sample_stem(task_id, sample)

    def scores_file(self, name: str) -> Path:
        """``scores/<name>.jsonl``."""
        return self.scores_dir / f"{name}.jsonl"

    def untrusted(self) -> RunDir:
        """This run, its files read from now on as another user's (no link followed on any
        component beneath it, never from a FIFO: :func:`omnilab._wsread.mark_untrusted`), as
        ``score``, ``analyze`` and ``report`` read runs that may be shared; returns itself."""
        _wsread.mark_untrusted(self.path)
        return self

    def dataset_file(self, config: RunConfig, data: Path | None = None) -> Path:
        """The dataset the run's answers are read from: ``data`` (``--data``) when given, else
        the one ``run.json`` names, unless someone else can change ``run.json`` (another
        user's run: the file it names would be read with this user's rights), a
        :class:`BenchError` asking for ``--data``."""
        if data is not None:
            return data
        why = foreign_writer(self.config_file)
        if why is not None:
            raise BenchError(
                f"{self.config_file} is {why}: the dataset it names is not read with your "
                "rights; pass the run's dataset with --data"
            )
        return config.data

    def is_run(self) -> bool:
        """Whether the folder holds a run (its ``run.json``)."""
        return self.config_file.is_file()

    def read_config(self) -> RunConfig:
        """The stored config; :class:`BenchError` if the folder holds no run or a broken one."""
        if not self.config_file.is_file():
            raise BenchError(f"{self.path} is not a run folder (no run.json); check the path")
        try:
            return RunConfig.model_validate_json(_wsread.read_bytes(self.config_file))
        except (OSError, ValidationError) as e:
            raise BenchError(f"cannot read {self.config_file}: {_first_line(e)}") from None

    def write_config(self, config: RunConfig) -> None:
        """Store ``config`` atomically (a crash leaves the old file or the new one)."""
        try:
            # This user's own folder, 0700 when made: never one another user made or a link.
            private_folder(self.path, what="--out folder")
            write_atomic(self.config_file, config.model_dump_json(indent=2) + "\n")
        except OSError as e:
            raise BenchError(f"cannot write {self.config_file}: {e.strerror or e}") from None

    def results(self) -> list[TaskResult]:
        """The results of ``results.jsonl`` (none if it does not exist), one per task and
        sample."""
        if not self.results_file.exists():
            return []
        return load_results(self.results_file)


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def load_results(path: str | Path) -> list[TaskResult]:
    """The results of a JSON Lines file, one per task id and sample: where one repeats (a file
    written by hand or merged), the last record wins, in the position of the first."""
    by_key: dict[tuple[str, int], TaskResult] = {}
    for result in read_results(path):
        by_key[result.key] = result
    return list(by_key.values())
