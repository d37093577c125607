"""Dataset adapters by name, imported only when used.

``load_dataset("omnigaia", "data/test_metadata.json")`` returns a :class:`DatasetLoad`: the
tasks, the records skipped (with reasons) and, per task, the media files not found. A name maps
to ``module:attribute`` of an object with ``load(path, *, media_root=None) -> DatasetLoad``;
plugins add their own with :func:`register_dataset` or an ``omnilab.datasets`` entry point.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, cast, runtime_checkable

from omnilab._ownfolders import own_links_resolved
from omnilab._urls import is_remote, parent_url
from omnilab.bench.datasets._common import DatasetLoad, SkippedItem
from omnilab.bench.datasets.remote_load import load_with_urls
from omnilab.bench.errors import BenchError, DatasetError, UnknownDatasetError
from omnilab.config import get_settings
from omnilab.registry import Registry

__all__ = [
    "DATASETS",
    "DatasetAdapter",
    "DatasetLoad",
    "SkippedItem",
    "data_source",
    "dataset_names",
    "get_dataset",
    "load_dataset",
    "prepare_data",
    "register_dataset",
]


@runtime_checkable
class DatasetAdapter(Protocol):
    """Reads one benchmark's file format into tasks."""

    name: str
    description: str

    def load(self, path: Path, *, media_root: Path | None = None) -> DatasetLoad:
        """Tasks of the file at ``path``; relative media paths resolve against ``media_root``."""
        ...


def _as_adapter(value: object) -> DatasetAdapter:
    if not isinstance(value, DatasetAdapter):
        raise TypeError(f"expected a dataset adapter (name, description, load), got {value!r}")
    return value


DATASETS: Registry[DatasetAdapter] = Registry(
    "dataset",
    group="omnilab.datasets",
    entries={
        "omnigaia": "omnilab.bench.datasets.omnigaia:ADAPTER",
        "omni-deepsearch": "omnilab.bench.datasets.deepsearch:ADAPTER",
        "omniagent": "omnilab.bench.datasets.omniagent:ADAPTER",
        "mcq": "omnilab.bench.datasets.mcq:ADAPTER",
        "jsonl": "omnilab.bench.datasets.jsonl:ADAPTER",
        "offline-suite": "omnilab.bench.offline_suite:ADAPTER",
        "terminal-tasks": "omnilab.bench.datasets.terminal_tasks:ADAPTER",
    },
    error=UnknownDatasetError,
    coerce=_as_adapter,
)
"""Dataset adapters by name (entry-point group ``omnilab.datasets``)."""


def register_dataset(name: str, adapter: str | DatasetAdapter) -> None:
    """Add or replace an adapter: an object, or ``"module:attribute"`` imported on first use."""
    DATASETS.register(name, adapter)


def dataset_names() -> list[str]:
    """The registered dataset names, in registration order (then plugins')."""
    return DATASETS.names()


def get_dataset(name: str) -> DatasetAdapter:
    """The adapter registered as ``name``; :class:`UnknownDatasetError` if there is none or it
    cannot load."""
    return DATASETS.get(name)


def prepare_data(name: str, path: str | Path | None) -> Path:
    """The data file of dataset ``name`` at ``path``, made first when the adapter generates its
    data (an adapter with ``prepare(path | None) -> Path``, e.g. ``offline-suite``), resolved;
    a link another user owns on its path raises :class:`~omnilab._ownfolders.UnsafeFolderError`."""
    adapter = get_dataset(name)
    prepare = getattr(adapter, "prepare", None)
    if prepare is not None:
        made: Path = prepare(Path(path).expanduser() if path is not None else None)
        return made.resolve()
    if path is None:
        raise BenchError(f"dataset {name} needs its file: omnilab eval {name} --data PATH")
    # Another user's link on the way would choose the file and its folder (the media root).
    return own_links_resolved(path, what="--data")


def data_source(name: str, data: str | Path | None) -> str | Path:
    """``--data`` as :func:`load_dataset` takes it: a URL as given (the loader fetches it, see
    :mod:`omnilab.bench.datasets.remote_load`), else :func:`prepare_data`'s local file."""
    if data is not None and is_remote(str(data)):
        return str(data)
    return prepare_data(name, data)


def load_dataset(
    name: str,
    path: str | Path,
    *,
    media_root: str | Path | None = None,
    allow_outside_media_root: bool = False,
) -> DatasetLoad:
    """Load dataset ``name`` from ``path``.

    The media root is, in order: ``media_root``, the ``bench.media_roots`` setting for ``name``,
    the data file's folder. A link another user owns on its path raises
    :class:`~omnilab._ownfolders.UnsafeFolderError` (one line); the root is resolved once.
    Media paths must lie beneath it (absolute paths and ``..`` raise :class:`DatasetError`)
    unless ``allow_outside_media_root`` (the user vouches for them).
    ``path`` and ``media_root`` may be URLs (``s3://``, ``https://``, ...): see
    :mod:`omnilab.bench.datasets.remote_load` (a full URL in the dataset must lie beneath a
    media root URL unless ``allow_outside_media_root``).
    """
    adapter = get_dataset(name)
    root = media_root if media_root is not None else get_settings().bench.media_roots.get(name)
    if root is None and is_remote(str(path)):
        root = parent_url(str(path))
    if root is not None and not is_remote(str(root)):
        # Resolved once, refusing another user's link on the way (they could point it at
        # root's own files); the adapters then read beneath the real folder.
        root = own_links_resolved(root, what="media root")
    elif root is None:
        own_links_resolved(Path(path).expanduser().parent, what="--data folder")

    def read(local: Path, media: Path | None) -> DatasetLoad:
        if allow_outside_media_root:
            load = cast("Callable[..., DatasetLoad]", adapter.load)
            if "allow_outside_media_root" not in inspect.signature(load).parameters:
                raise DatasetError(
                    f"dataset {name} makes its own files and takes no --allow-outside-media-root"
                )
            loaded: DatasetLoad = load(local, media_root=media, allow_outside_media_root=True)
            return loaded
        return adapter.load(local, media_root=media)

    loaded = load_with_urls(read, path, root, allow_outside_media_root=allow_outside_media_root)
    if loaded.warnings:
        fits = _formats_that_fit([t.original for t in loaded.tasks], besides=name)
        if fits:
            loaded.warnings.append(f"the items look like {' or '.join(fits)} items")
    return loaded


def _formats_that_fit(records: list[dict[str, object]], *, besides: str) -> list[str]:
    """Registered formats (with expected fields) whose fields the records do carry."""
    fits = []
    for other in dataset_names():
        if other == besides:
            continue
        try:
            adapter = get_dataset(other)
        except UnknownDatasetError:
            continue  # a plugin that does not load is no suggestion
        expected = getattr(adapter, "expected_fields", ())
        lacking = getattr(adapter, "lacking", None)
        if expected and records and callable(lacking) and not lacking(records):
            fits.append(other)
    return fits
