"""Datasets and media at URLs: the dataset file fetched and parsed, media paths made URLs.

``--data s3://bucket/bench/tasks.json`` fetches the file into the media cache and parses the
local copy with the dataset's own adapter. When the media root is a URL (given, or by default
the folder of a dataset at a URL), each relative media path becomes a URL beneath it, by the
rules of :mod:`omnilab._urls` (no ``..``, no absolute path); a full URL in a
dataset must lie beneath the media root URL unless ``allow_outside_media_root``, so a dataset
never makes the harness fetch from a host of its choosing. Media files are not fetched here:
each task fetches its own where it runs (:mod:`omnilab.bench.remote_stage`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from omnilab._urls import (
    OutsideMediaRootError,
    beneath,
    is_remote,
    join_beneath,
    parent_url,
    public_url,
    url_name,
)
from omnilab.bench.errors import DatasetError
from omnilab.bench.task import Task, TaskFile
from omnilab.errors import OmnilabError

if TYPE_CHECKING:
    from omnilab.bench.datasets._common import DatasetLoad

__all__ = ["RemoteInputs", "fetch_data", "load_with_urls", "remote_inputs"]


class _Read(Protocol):
    """The dataset's adapter reading a local file, relative paths beneath a local folder."""

    def __call__(self, local: Path, media: Path | None, /) -> DatasetLoad: ...


@dataclass(frozen=True)
class RemoteInputs:
    """What of a run's ``--data`` and ``--media-root`` is at URLs (recorded without query)."""

    data: Path | None
    """The local copy of a dataset file at a URL (``None``: ``--data`` is a local path)."""
    data_url: str | None
    media_url: str | None
    """The media root URL: ``--media-root`` when a URL, else the folder of a dataset URL."""


def remote_inputs(data: str | Path | None, media_root: str | Path | None) -> RemoteInputs:
    """Fetch a dataset file given as a URL, and name the media root URL, if any."""
    data_url = str(data) if data is not None and is_remote(str(data)) else None
    media_url: str | None = None
    if media_root is not None and is_remote(str(media_root)):
        media_url = public_url(str(media_root))
    elif media_root is None and data_url is not None:
        media_url = parent_url(data_url)
    return RemoteInputs(
        data=fetch_data(data_url) if data_url is not None else None,
        data_url=public_url(data_url) if data_url is not None else None,
        media_url=media_url,
    )


def fetch_data(url: str) -> Path:
    """The local copy of the dataset file at ``url`` (fetched into the media cache once);
    raises :class:`DatasetError` with one line when it cannot be fetched."""
    # Imported here: the fetch layer loads the media package (PyAV, Pillow), which a run from
    # local files, text-only runs above all, never needs (tests/bench/test_eval_imports.py).
    from omnilab.media.remote import fetch

    try:
        return fetch(url).path
    except OmnilabError as e:
        raise DatasetError(f"cannot read --data: {e}") from None


def load_with_urls(
    read: _Read,
    path: str | Path,
    media_root: str | Path | None,
    *,
    allow_outside_media_root: bool = False,
) -> DatasetLoad:
    """``read`` of ``path`` (a file or a URL) with media at URLs where they are."""
    data_url = str(path) if is_remote(str(path)) else None
    local = fetch_data(data_url) if data_url is not None else Path(path)
    root_url = str(media_root) if media_root is not None and is_remote(str(media_root)) else None
    if root_url is None:
        loaded = read(local, Path(media_root) if media_root else None)
    else:
        # The adapter resolves relative paths against a local folder; an empty one finds
        # nothing there (its files are named by URL below).
        with tempfile.TemporaryDirectory(prefix="omnilab-url-root-") as empty:
            loaded = read(local, Path(empty))
        loaded.media_url = public_url(root_url)
    loaded.data_url = public_url(data_url) if data_url is not None else None
    tasks = [_with_urls(t, root_url, allow_outside_media_root) for t in loaded.tasks]
    if any(new is not old for new, old in zip(tasks, loaded.tasks, strict=True)):
        loaded.tasks = tasks
        loaded.missing_media = {t.id: m for t in tasks if (m := t.missing_files())}
    return loaded


def _with_urls(task: Task, root_url: str | None, allow_outside: bool) -> Task:
    files = tuple(_file_url(task.id, f, root_url, allow_outside) for f in task.files)
    return task if files == task.files else task.model_copy(update={"files": files})


def _file_url(task_id: str, f: TaskFile, root_url: str | None, allow_outside: bool) -> TaskFile:
    given = f.given.strip()
    if is_remote(given):
        if not allow_outside and (root_url is None or not beneath(root_url, given)):
            where = f"the media root {public_url(root_url)}" if root_url else "a media root URL"
            raise DatasetError(
                f"task {task_id}: {public_url(given)} is not beneath {where}; a dataset may "
                "name URLs only beneath --media-root (or pass --allow-outside-media-root)"
            )
        url = given
    elif root_url is not None:
        try:
            url = join_beneath(root_url, given)
        except OutsideMediaRootError as e:
            raise DatasetError(f"task {task_id}: {e}") from None
    else:
        return f
    return f.model_copy(update={"url": url, "path": Path(url_name(url)), "root": None})
